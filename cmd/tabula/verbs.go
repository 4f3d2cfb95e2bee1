package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/tabula-dev/tabula/internal/bench"
	"github.com/tabula-dev/tabula/internal/cli"
)

// verbFunc runs one of tabula's commands other than serving, with the arguments after its
// name. A flag.ErrHelp it returns means it printed help, and exits 0.
type verbFunc func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error

// verbs are tabula's commands other than serving, by name (and by the flags that stand for
// version and help), filled by init: help refers to them.
var verbs = map[string]verbFunc{}

func init() {
	verbs["bench"] = func(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
		return bench.Main(ctx, args, stdout, stderr)
	}
	verbs["reset"] = func(_ context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
		return resetVerb(args, stdin, stdout, stderr)
	}
	for _, name := range []string{"version", "--version", "-version"} {
		verbs[name] = versionVerb
	}
	for _, name := range []string{"help", "--help", "-help", "-h"} {
		verbs[name] = helpVerb
	}
	for _, v := range cli.Verbs {
		name := v.Name
		verbs[name] = func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
			return cli.Run(ctx, name, args, cli.Env{Stdin: stdin, Stdout: stdout, Stderr: stderr})
		}
	}
}

// printUsage writes tabula's help: every command, then the serving flags of fs.
func printUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, `Tabula is Azure Storage's Blob, Queue and Table services on your machine, and a client of
any storage account.

Usage:
  tabula [flags]              serve Blob, Queue and Table (the flags are below)
`)
	for _, v := range cli.Verbs {
		line := "  tabula " + v.Name + " " + v.Args
		if len(line) > 30 {
			fmt.Fprintf(w, "%s\n  %-28s%s\n", line, "", v.Summary)
		} else {
			fmt.Fprintf(w, "%-30s%s\n", line, v.Summary)
		}
	}
	fmt.Fprint(w, `  tabula bench [flags]        load-test Table, Queue and Blob endpoints (Tabula, Azurite, Azure)
  tabula reset [--yes]        empty the data directory (asks first)
  tabula version              print the version
  tabula help [COMMAND]       this help, or a command's (as tabula COMMAND --help)

The client commands use the endpoints of --connection-string, else of
$AZURE_STORAGE_CONNECTION_STRING, else of UseDevelopmentStorage=true (this machine's ports
10000, 10001 and 10002). Entities travel as NDJSON with their EDM types; on a terminal,
queries print an aligned table.

Serving flags (each also read from the environment variable it names; booleans take
1/0, true/false, yes/no, on/off):
`)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// helpVerb prints tabula's help, or with an argument that command's.
func helpVerb(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		if v, ok := verbs[args[0]]; ok && v != nil && !isHelp(args[0]) {
			return v(ctx, []string{"--help"}, stdin, stdout, stderr)
		}
		if !isHelp(args[0]) {
			return fmt.Errorf("tabula help: no command %q (tabula help lists them)", args[0])
		}
	}
	_, err := parseFlags([]string{"--help"}, stdout)
	return err
}

func isHelp(arg string) bool {
	return arg == "help" || arg == "--help" || arg == "-help" || arg == "-h"
}

// version is the release, set when building one: go build -ldflags "-X main.version=v1.2.0".
// Without it, the module version go install records (tabula@v1.2.0) is used.
var version string

func versionVerb(_ context.Context, args []string, _ io.Reader, stdout, _ io.Writer) error {
	if len(args) == 1 && isHelp(args[0]) {
		fmt.Fprintln(stdout, "usage: tabula version   prints the release, commit, build time, Go version and platform")
		return nil
	}
	if len(args) > 0 {
		return fmt.Errorf("tabula version takes no arguments (see tabula version --help)")
	}
	fmt.Fprintln(stdout, versionString())
	return nil
}

// versionString is "tabula VERSION (commit C, TIME[, modified]) GOVERSION OS/ARCH", with what
// the build recorded.
func versionString() string {
	v := version
	var details []string
	if info, ok := debug.ReadBuildInfo(); ok {
		if v == "" && info.Main.Version != "" {
			v = info.Main.Version
		}
		settings := map[string]string{}
		for _, s := range info.Settings {
			settings[s.Key] = s.Value
		}
		if rev := settings["vcs.revision"]; rev != "" {
			details = append(details, "commit "+rev[:min(12, len(rev))])
		}
		if t := settings["vcs.time"]; t != "" {
			details = append(details, t)
		}
		if settings["vcs.modified"] == "true" {
			details = append(details, "modified")
		}
	}
	if v == "" {
		v = "(devel)"
	}
	s := "tabula " + v
	if len(details) > 0 {
		s += " (" + strings.Join(details, ", ") + ")"
	}
	return s + " " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH
}

// flagGiven reports whether the flag called name was on the command line.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}
