package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// parseBool reads a yes-or-no setting the ways people write one in flags and environment
// files: 1/0, true/false, yes/no, on/off, in any case. Anything else is an error rather than a
// silent "no", so that TABULA_IN_MEMORY=yes cannot write to disk unnoticed.
func parseBool(s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "1", "true", "yes", "on":
		return true, nil
	case "0", "false", "no", "off":
		return false, nil
	}
	return false, fmt.Errorf("%q is not a yes or no: want 1/0, true/false, yes/no or on/off", s)
}

// boolValue is a flag.Value for a boolean read with parseBool; IsBoolFlag lets it be given as
// a bare --name.
type boolValue bool

func (b *boolValue) Set(s string) error {
	v, err := parseBool(s)
	if err != nil {
		return err
	}
	*b = boolValue(v)
	return nil
}

func (b *boolValue) String() string { return strconv.FormatBool(bool(*b)) }

func (b *boolValue) IsBoolFlag() bool { return true }

// boolFlag defines a boolean flag whose default, def, env overrides when set; an env value
// parseBool does not accept, the empty one included, is added to errs.
func boolFlag(fs *flag.FlagSet, errs *[]error, p *bool, name, env string, def bool, usage string) {
	*p = def
	if v, ok := os.LookupEnv(env); ok {
		b, err := parseBool(v)
		if err != nil {
			*errs = append(*errs, fmt.Errorf("%s=%q: want 1/0, true/false, yes/no or on/off", env, v))
		} else {
			*p = b
		}
	}
	if def {
		usage += " (env " + env + "=0 turns it off)"
	} else {
		usage += " (env " + env + "=1)"
	}
	fs.Var((*boolValue)(p), name, usage)
}

// checkAddr checks a HOST:PORT an endpoint must listen on. An empty one is an error, not the
// random port on every interface net.Listen would make of it; so is one without a port.
func checkAddr(flagName, env, addr string) error {
	if addr == "" {
		return fmt.Errorf("--%s (%s) is empty: give the HOST:PORT to listen on, such as 127.0.0.1:10002", flagName, env)
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--%s %q: want HOST:PORT, such as 127.0.0.1:10002 (%v)", flagName, addr, err)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("--%s %q: the port must be a number from 0 to 65535", flagName, addr)
	}
	return nil
}
