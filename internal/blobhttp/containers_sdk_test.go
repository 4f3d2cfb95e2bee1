package blobhttp_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/service"
)

func TestSDKContainers(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := t.Context()
		svc := e.client.ServiceClient()
		c := svc.NewContainerClient("photos")
		created, err := c.Create(ctx, &container.CreateOptions{Metadata: map[string]*string{"team": to.Ptr("a")}, Access: to.Ptr(container.PublicAccessTypeBlob)})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Create(ctx, nil)
		wantStatus(t, err, 409, "ContainerAlreadyExists")
		props, err := c.GetProperties(ctx, nil)
		if err != nil || *props.ETag != *created.ETag || *props.Metadata["Team"] != "a" || *props.BlobPublicAccess != container.PublicAccessTypeBlob ||
			*props.LeaseState != lease.StateTypeAvailable || *props.LeaseStatus != lease.StatusTypeUnlocked {
			t.Fatalf("GetProperties: %+v, %v", props, err)
		}
		if _, err := c.SetMetadata(ctx, &container.SetMetadataOptions{Metadata: map[string]*string{"team": to.Ptr("b")}}); err != nil {
			t.Fatal(err)
		}
		expiry := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
		_, err = c.SetAccessPolicy(ctx, &container.SetAccessPolicyOptions{
			Access: to.Ptr(container.PublicAccessTypeContainer),
			ContainerACL: []*container.SignedIdentifier{{ID: to.Ptr("readers"), AccessPolicy: &container.AccessPolicy{
				Expiry: &expiry, Permission: to.Ptr("rl"),
			}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		acl, err := c.GetAccessPolicy(ctx, nil)
		if err != nil || *acl.BlobPublicAccess != container.PublicAccessTypeContainer || len(acl.SignedIdentifiers) != 1 ||
			*acl.SignedIdentifiers[0].ID != "readers" || !acl.SignedIdentifiers[0].AccessPolicy.Expiry.Equal(expiry) {
			t.Fatalf("GetAccessPolicy: %+v, %v", acl, err)
		}
		info, err := c.GetAccountInfo(ctx, nil)
		if err != nil || *info.SKUName != "Standard_RAGRS" || *info.AccountKind != "StorageV2" {
			t.Fatalf("GetAccountInfo: %+v, %v", info, err)
		}
		// Leases guard Delete Container only.
		lc, err := lease.NewContainerClient(c, &lease.ContainerClientOptions{LeaseID: to.Ptr("0f8b7c2a-1111-4222-8333-444455556666")})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := lc.AcquireLease(ctx, -1, nil); err != nil {
			t.Fatal(err)
		}
		_, err = c.Delete(ctx, nil)
		wantStatus(t, err, 412, "LeaseIdMissing")
		if _, err := c.Delete(ctx, &container.DeleteOptions{AccessConditions: &container.AccessConditions{LeaseAccessConditions: &container.LeaseAccessConditions{LeaseID: lc.LeaseID()}}}); err != nil {
			t.Fatal(err)
		}
		_, err = c.GetProperties(ctx, nil)
		wantStatus(t, err, 404, "ContainerNotFound")
		_, err = svc.NewContainerClient("Bad_Name").Create(ctx, nil)
		wantStatus(t, err, 400, "InvalidResourceName")
	})
}

func TestSDKListContainers(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := t.Context()
		for i := range 7 {
			if _, err := e.client.CreateContainer(ctx, fmt.Sprintf("list-%02d", i), &container.CreateOptions{Metadata: map[string]*string{"n": to.Ptr(fmt.Sprint(i))}}); err != nil {
				t.Fatal(err)
			}
		}
		e.container("other")
		pager := e.client.NewListContainersPager(&service.ListContainersOptions{Prefix: to.Ptr("list-"), MaxResults: to.Ptr(int32(3)), Include: service.ListContainersInclude{Metadata: true}})
		var names []string
		pages := 0
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			for _, c := range page.ContainerItems {
				names = append(names, *c.Name)
				// Listings carry metadata names as stored (lower case, see metadata in
				// headers.go); headers reach Go clients canonicalised.
				if v := c.Metadata["n"]; v == nil || "list-0"+*v != *c.Name {
					t.Errorf("%s: metadata %v", *c.Name, c.Metadata)
				}
			}
		}
		if pages != 3 || fmt.Sprint(names) != "[list-00 list-01 list-02 list-03 list-04 list-05 list-06]" {
			t.Fatalf("%d pages: %v", pages, names)
		}
	})
}

func TestSDKServiceProperties(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := t.Context()
		svc := e.client.ServiceClient()
		_, err := svc.SetProperties(ctx, &service.SetPropertiesOptions{
			DeleteRetentionPolicy: &service.RetentionPolicy{Enabled: to.Ptr(false)},
			CORS: []*service.CORSRule{{AllowedOrigins: to.Ptr("https://app.example"), AllowedMethods: to.Ptr("GET,PUT"),
				AllowedHeaders: to.Ptr("x-ms-meta-*"), ExposedHeaders: to.Ptr("x-ms-request-id"), MaxAgeInSeconds: to.Ptr(int32(60))}},
		})
		if err != nil {
			t.Fatal(err)
		}
		props, err := svc.GetProperties(ctx, nil)
		if err != nil || len(props.CORS) != 1 || *props.CORS[0].AllowedOrigins != "https://app.example" {
			t.Fatalf("GetProperties: %+v, %v", props, err)
		}
	})
}

// Every account has the system container $logs, which only listings with include=system show
// (azblob's recorded TestListContainersSystem).
func TestSDKLogsContainerIsASystemContainer(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := t.Context()
		e.container("mine")
		list := func(system bool) []string {
			t.Helper()
			var names []string
			pager := e.client.ServiceClient().NewListContainersPager(&service.ListContainersOptions{Include: service.ListContainersInclude{System: system}})
			for pager.More() {
				page, err := pager.NextPage(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range page.ContainerItems {
					names = append(names, *c.Name)
				}
			}
			return names
		}
		if got := fmt.Sprint(list(true)); got != "[$logs mine]" {
			t.Fatalf("with include=system: %s", got)
		}
		if got := fmt.Sprint(list(false)); got != "[mine]" {
			t.Fatalf("without: %s", got)
		}
		if _, err := e.client.ServiceClient().NewContainerClient("$logs").GetProperties(ctx, nil); err != nil {
			t.Fatalf("$logs is listed but not there: %v", err)
		}
	})
}
