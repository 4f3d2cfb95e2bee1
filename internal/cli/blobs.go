package cli

import (
	"context"
	"fmt"
	"io"
	"mime"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

const containerUsage = `container ls | create CONTAINER... | rm CONTAINER...

List, create and delete the Blob service's containers.`

const blobUsage = `blob ls CONTAINER [--prefix P] | put CONTAINER NAME [FILE] | get CONTAINER NAME [FILE] | rm CONTAINER NAME...

  ls     the container's blobs: name, size, type and last change
  put    uploads FILE (stdin when none or -) as a block blob, replacing any blob of that name
  get    downloads the blob to FILE (stdout when none or -)
  rm     deletes blobs, with their snapshots`

// connectBlob makes the Blob service client for the connection string resolveConnectionString
// finds.
func connectBlob(flagValue string, env Env) (*azblob.Client, error) {
	cs, endpoint, err := resolveEndpoint(flagValue, env, blobService)
	if err != nil {
		return nil, err
	}
	opts := &azblob.ClientOptions{ClientOptions: clientOptions(env)}
	switch {
	case cs.key != "":
		cred, err := azblob.NewSharedKeyCredential(cs.account, cs.key)
		if err != nil {
			return nil, fmt.Errorf("connection string: AccountKey: %w", err)
		}
		return azblob.NewClientWithSharedKeyCredential(endpoint+"/", cred, opts)
	case cs.sas != "":
		return azblob.NewClientWithNoCredential(endpoint+"/?"+cs.sas, opts)
	default:
		return azblob.NewClientWithNoCredential(endpoint+"/", opts)
	}
}

func containerVerb(ctx context.Context, args []string, env Env) error {
	fs, connFlag := newFlags(env, "container", containerUsage)
	args, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(args) == 0 {
		return fmt.Errorf("tabula container: want ls, create or rm (see tabula container --help)")
	}
	sub, names := args[0], args[1:]
	switch sub {
	case "ls", "list":
		err = wantArgs(fs, names, 0, 0, "ls takes no arguments")
	case "create", "rm", "delete":
		err = wantArgs(fs, names, 1, -1, sub+": which container?")
	default:
		err = fmt.Errorf("tabula container %s: want ls, create or rm (see tabula container --help)", sub)
	}
	if err != nil {
		return err
	}
	c, err := connectBlob(*connFlag, env)
	if err != nil {
		return err
	}
	switch sub {
	case "ls", "list":
		pager := c.NewListContainersPager(nil)
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				return describe(err)
			}
			for _, item := range page.ContainerItems {
				fmt.Fprintln(env.Stdout, *item.Name)
			}
		}
	case "create":
		for _, name := range names {
			if _, err := c.CreateContainer(ctx, name, nil); err != nil {
				return fmt.Errorf("creating container %s: %w", name, describe(err))
			}
		}
	default:
		for _, name := range names {
			if _, err := c.DeleteContainer(ctx, name, nil); err != nil {
				return fmt.Errorf("deleting container %s: %w", name, describe(err))
			}
		}
	}
	return nil
}

func blobVerb(ctx context.Context, args []string, env Env) error {
	fs, connFlag := newFlags(env, "blob", blobUsage)
	prefix := fs.String("prefix", "", "ls: only the blobs whose names start with `P`")
	contentType := fs.String("content-type", "", "put: the blob's `TYPE` (default: guessed from FILE's extension, else application/octet-stream)")
	args, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(args) == 0 {
		return fmt.Errorf("tabula blob: want ls, put, get or rm (see tabula blob --help)")
	}
	sub, args := args[0], args[1:]
	switch sub {
	case "ls", "list":
		err = wantArgs(fs, args, 1, 1, "ls wants CONTAINER")
	case "put", "get":
		err = wantArgs(fs, args, 2, 3, sub+" wants CONTAINER NAME [FILE]")
	case "rm", "delete":
		err = wantArgs(fs, args, 2, -1, "rm wants CONTAINER NAME...")
	default:
		err = fmt.Errorf("tabula blob %s: want ls, put, get or rm (see tabula blob --help)", sub)
	}
	if err != nil {
		return err
	}
	c, err := connectBlob(*connFlag, env)
	if err != nil {
		return err
	}
	containerName := args[0]
	file := "-"
	if len(args) == 3 && (sub == "put" || sub == "get") {
		file = args[2]
	}
	switch sub {
	case "ls", "list":
		return listBlobs(ctx, c, containerName, *prefix, env.Stdout)
	case "put":
		return putBlob(ctx, c, containerName, args[1], file, *contentType, env.Stdin)
	case "get":
		return getBlob(ctx, c, containerName, args[1], file, env.Stdout)
	default:
		for _, name := range args[1:] {
			if _, err := c.DeleteBlob(ctx, containerName, name, &blob.DeleteOptions{DeleteSnapshots: to.Ptr(blob.DeleteSnapshotsOptionTypeInclude)}); err != nil {
				return fmt.Errorf("deleting blob %s: %w", name, describe(err))
			}
		}
		return nil
	}
}

// listBlobs writes a container's blobs as aligned columns: name, size, type, last change.
func listBlobs(ctx context.Context, c *azblob.Client, containerName, prefix string, w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSIZE\tTYPE\tLAST MODIFIED")
	o := &container.ListBlobsFlatOptions{}
	if prefix != "" {
		o.Prefix = &prefix
	}
	pager := c.NewListBlobsFlatPager(containerName, o)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return describe(err)
		}
		for _, b := range page.Segment.BlobItems {
			size, kind, modified := "", "", ""
			if p := b.Properties; p != nil {
				if p.ContentLength != nil {
					size = fmt.Sprint(*p.ContentLength)
				}
				if p.BlobType != nil {
					kind = string(*p.BlobType)
				}
				if p.LastModified != nil {
					modified = p.LastModified.UTC().Format(time.RFC3339)
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", cell(*b.Name), size, kind, modified)
		}
	}
	return tw.Flush()
}

// putBlob uploads file ("-": stdin) as a block blob, in blocks when it is large.
func putBlob(ctx context.Context, c *azblob.Client, containerName, name, file, contentType string, stdin io.Reader) error {
	if contentType == "" && file != "-" {
		contentType = mime.TypeByExtension(filepath.Ext(file))
	}
	if contentType == "" {
		contentType = "application/octet-stream"
	}
	headers := &blob.HTTPHeaders{BlobContentType: &contentType}
	var err error
	if file == "-" {
		_, err = c.UploadStream(ctx, containerName, name, stdin, &azblob.UploadStreamOptions{HTTPHeaders: headers})
	} else {
		f, openErr := os.Open(file)
		if openErr != nil {
			return openErr
		}
		defer f.Close()
		_, err = c.UploadFile(ctx, containerName, name, f, &azblob.UploadFileOptions{HTTPHeaders: headers})
	}
	if err != nil {
		return fmt.Errorf("uploading blob %s: %w", name, describe(err))
	}
	return nil
}

// getBlob downloads a blob to file ("-": stdout). A file is written whole or not at all.
func getBlob(ctx context.Context, c *azblob.Client, containerName, name, file string, stdout io.Writer) error {
	resp, err := c.DownloadStream(ctx, containerName, name, nil)
	if err != nil {
		return fmt.Errorf("downloading blob %s: %w", name, describe(err))
	}
	body := resp.NewRetryReader(ctx, nil)
	defer body.Close()
	if file == "-" {
		_, err := io.Copy(stdout, body)
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, body); err != nil {
		tmp.Close()
		return fmt.Errorf("downloading blob %s: %w", name, err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), file)
}
