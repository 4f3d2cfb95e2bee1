// Package cli is tabula's client verbs: `tabula table`, `tabula entity`, `tabula export` and
// `tabula import` for the Table service, `tabula container` and `tabula blob` for the Blob
// service, and `tabula queue` for the Queue service. They work against any storage endpoint
// (Tabula, Azurite or Azure itself) through the official Go SDKs (aztables, azblob, azqueue).
//
// The endpoints come from --connection-string, else AZURE_STORAGE_CONNECTION_STRING (as for
// the az CLI), else UseDevelopmentStorage=true: the emulator's well-known addresses and account.
//
// Entities are read and written as NDJSON, one entity a line, in the Table service's JSON form
// with an @odata.type annotation on every value whose type JSON alone does not say (Int64,
// Double, DateTime, Guid, Binary): what export writes, import reads back with every EDM type
// intact. On a terminal, query results are shown as an aligned table instead.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

// Env is what a verb takes from its surroundings.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
	// Transport sends the SDK's requests; nil means the SDK's default HTTP client.
	Transport policy.Transporter
}

func (e Env) getenv(name string) string {
	if e.Getenv != nil {
		return e.Getenv(name)
	}
	return os.Getenv(name)
}

// Verb is one client verb, for tabula's help.
type Verb struct {
	Name, Args, Summary string
	run                 func(ctx context.Context, args []string, env Env) error
}

// Verbs lists the client verbs in the order help shows them.
var Verbs = []Verb{
	{"table", "ls | create TABLE... | rm TABLE...", "list, create and delete tables", tableVerb},
	{"entity", "get | put | rm | query TABLE ...", "read, write, delete and query entities", entityVerb},
	{"export", "TABLE [FILE]", "write a table's entities as NDJSON, EDM types kept", exportVerb},
	{"import", "TABLE [FILE]", "upsert NDJSON entities in entity group transactions; resumable", importVerb},
	{"container", "ls | create CONTAINER... | rm CONTAINER...", "list, create and delete blob containers", containerVerb},
	{"blob", "ls | put | get | rm CONTAINER ...", "list, upload, download and delete blobs", blobVerb},
	{"queue", "ls | create | rm | put | peek | pop | clear QUEUE ...", "manage queues; put, peek at and receive messages", queueVerb},
}

// Run runs the client verb called name with args (the arguments after it). --help prints the
// verb's usage to env.Stdout and returns nil. It returns an error when name is not a client
// verb, when the arguments are wrong, and when the operation fails.
func Run(ctx context.Context, name string, args []string, env Env) error {
	for _, v := range Verbs {
		if v.Name == name {
			err := v.run(ctx, args, env)
			if errors.Is(err, flag.ErrHelp) {
				return nil
			}
			return err
		}
	}
	return fmt.Errorf("%q is not a client verb", name)
}

// IsVerb reports whether name is a client verb.
func IsVerb(name string) bool {
	for _, v := range Verbs {
		if v.Name == name {
			return true
		}
	}
	return false
}

// connectionHelp ends every verb's usage.
const connectionHelp = `
The endpoint is --connection-string's, else $AZURE_STORAGE_CONNECTION_STRING's, else
UseDevelopmentStorage=true's (http://127.0.0.1 with blob 10000, queue 10001 and table 10002,
account devstoreaccount1 and its well-known key).
`

// newFlags makes the flag set of one verb (or sub-verb), with the flags every verb has.
// usage is printed, with the flags, for --help (by parseArgs, to env.Stdout).
func newFlags(env Env, name, usage string) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		fmt.Fprintf(env.Stdout, "usage: tabula %s\n", strings.TrimLeft(usage, "\n"))
		fmt.Fprintln(env.Stdout, "\nFlags:")
		fs.SetOutput(env.Stdout)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
		fmt.Fprint(env.Stdout, connectionHelp)
	}
	cs := fs.String("connection-string", "", "the storage account's `CONNECTION STRING` (default $AZURE_STORAGE_CONNECTION_STRING, else UseDevelopmentStorage=true)")
	return fs, cs
}

// parseArgs parses the flags of fs wherever they stand among args (Go's flag package stops at
// the first argument that is not a flag, but `tabula entity get T pk rk --select a` reads
// better with flags last) and returns the other arguments in order. "--" ends the flags, for
// keys that start with a dash. --help prints the usage and returns flag.ErrHelp; a wrong flag
// is an error naming it, with no usage: stdout may be a pipe of NDJSON, and the error goes to
// stderr in one line.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	// Parse calls Usage for a wrong flag as well as for --help: keep it for --help alone.
	usage := fs.Usage
	fs.Usage = func() {}
	defer func() { fs.Usage = usage }()
	var rest []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				usage()
				return nil, err
			}
			return nil, fmt.Errorf("%w (see tabula %s --help)", err, fs.Name())
		}
		consumed := len(args) - fs.NArg()
		if consumed > 0 && args[consumed-1] == "--" {
			return append(rest, fs.Args()...), nil
		}
		args = fs.Args()
		if len(args) == 0 {
			return rest, nil
		}
		rest = append(rest, args[0])
		args = args[1:]
	}
}

// wantArgs checks the number of positional arguments.
func wantArgs(fs *flag.FlagSet, args []string, min, max int, what string) error {
	if len(args) < min || (max >= 0 && len(args) > max) {
		return fmt.Errorf("tabula %s %s (see tabula %s --help)", fs.Name(), what, fs.Name())
	}
	return nil
}
