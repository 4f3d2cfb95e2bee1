package cli

import (
	"context"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

const tableUsage = `table ls | create TABLE... | rm TABLE...

  ls             list the tables, one name a line
  create TABLE   create tables (an existing one is an error)
  rm TABLE       delete tables with all their entities (a missing one is an error)
`

func tableVerb(ctx context.Context, args []string, env Env) error {
	fs, connFlag := newFlags(env, "table", tableUsage)
	args, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(args) == 0 {
		return fmt.Errorf("tabula table: want ls, create or rm (see tabula table --help)")
	}
	sub, names := args[0], args[1:]
	switch sub {
	case "ls", "list":
		if len(names) > 0 {
			return fmt.Errorf("tabula table ls takes no arguments")
		}
	case "create", "rm", "delete":
		if len(names) == 0 {
			return fmt.Errorf("tabula table %s: which table? (see tabula table --help)", sub)
		}
	default:
		return fmt.Errorf("tabula table %s: want ls, create or rm (see tabula table --help)", sub)
	}
	svc, err := connect(*connFlag, env)
	if err != nil {
		return err
	}
	switch sub {
	case "ls", "list":
		pager := svc.NewListTablesPager(nil)
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				return describe(err)
			}
			for _, t := range page.Tables {
				if t.Name != nil {
					fmt.Fprintln(env.Stdout, *t.Name)
				}
			}
		}
	case "create":
		for _, name := range names {
			if _, err := svc.CreateTable(ctx, name, nil); err != nil {
				return fmt.Errorf("creating table %s: %w", name, describe(err))
			}
		}
	case "rm", "delete":
		for _, name := range names {
			if _, err := svc.DeleteTable(ctx, name, nil); err != nil {
				return fmt.Errorf("deleting table %s: %w", name, describe(err))
			}
		}
	}
	return nil
}

// fullMetadata asks for every annotation, so that no type is left to guesswork.
var fullMetadata = func() *aztables.MetadataFormat { f := aztables.MetadataFormatFull; return &f }()
