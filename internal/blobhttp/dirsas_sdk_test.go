package blobhttp_test

import (
	"context"
	"encoding/base64"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/appendblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"

	"github.com/tabula-dev/tabula/internal/auth"
)

// TestDirectorySAS: a SAS signed for a directory (sr=d, sdd its depth) reaches the blob
// named like it and every blob under it, and nothing else, as the azblob's live tests see
// the real service do on an account without a hierarchical namespace.
func TestDirectorySAS(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		e.container("dirs")
		dev := auth.DevelopmentAccount()
		cred, err := azblob.NewSharedKeyCredential(dev.Name, base64.StdEncoding.EncodeToString(dev.Keys[0]))
		if err != nil {
			t.Fatal(err)
		}
		sign := func(dir string) string {
			q, err := sas.BlobSignatureValues{
				Protocol: sas.ProtocolHTTPSandHTTP, ExpiryTime: time.Now().Add(time.Hour),
				Permissions:   (&sas.BlobPermissions{Read: true, Create: true, Write: true}).String(),
				ContainerName: "dirs", Directory: dir,
			}.SignWithSharedKey(cred)
			if err != nil {
				t.Fatal(err)
			}
			if q.Resource() != "d" || q.SignedDirectoryDepth() != strconv.Itoa(strings.Count(dir, "/")+1) {
				t.Fatalf("the SDK signed sr=%s sdd=%s", q.Resource(), q.SignedDirectoryDepth())
			}
			return q.Encode()
		}
		create := func(name, token string) error {
			c, err := appendblob.NewClientWithNoCredential(e.url+"/dirs/"+name+"?"+token, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Create(ctx, nil)
			return err
		}
		for _, dir := range []string{"foo", "foo/bar", "foo/bar/hello"} {
			token := sign(dir)
			for _, name := range []string{dir, dir + "/child", dir + "/deeper/still"} {
				if err := create(name, token); err != nil {
					t.Fatalf("SAS for %s, blob %s: %v", dir, name, err)
				}
			}
		}
		token := sign("foo/bar")
		for _, outside := range []string{"foo", "foo/barx", "foo/barx/child", "other/bar"} {
			err := create(outside, token)
			wantStatus(t, err, 403, "AuthenticationFailed")
		}
	})
}
