package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue/sas"
)

// Queue SAS and account SAS made by the Go SDK, with Azure's permissions (queue.md §2.3-2.4).

var queueNoRetry = &azqueue.ClientOptions{ClientOptions: policy.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}}}

func queueSASClient(t *testing.T, sasURL string) *azqueue.QueueClient {
	t.Helper()
	c, err := azqueue.NewQueueClientWithNoCredential(sasURL, queueNoRetry)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func sharedKey(t *testing.T) *azqueue.SharedKeyCredential {
	t.Helper()
	cred, err := azqueue.NewSharedKeyCredential("devstoreaccount1", devKey)
	if err != nil {
		t.Fatal(err)
	}
	return cred
}

func TestQueueSASGrantsItsPermissionsOnItsQueueOnly(t *testing.T) {
	forEachQueueBackend(t, func(t *testing.T, s *queueServer) {
		ctx := context.Background()
		owner := s.newQueue(t, "jobs")
		s.newQueue(t, "other")
		expiry := time.Now().Add(time.Hour)

		raup, err := owner.GetSASURL(sas.QueuePermissions{Read: true, Add: true, Update: true, Process: true}, expiry, nil)
		if err != nil {
			t.Fatal(err)
		}
		q := queueSASClient(t, raup)
		if _, err := q.EnqueueMessage(ctx, "via sas", nil); err != nil {
			t.Fatalf("a: %v", err)
		}
		if p, err := q.PeekMessages(ctx, nil); err != nil || len(p.Messages) != 1 {
			t.Fatalf("r: %v, %v", p.Messages, err)
		}
		if _, err := q.GetProperties(ctx, nil); err != nil {
			t.Fatalf("r (metadata): %v", err)
		}
		got, err := q.DequeueMessage(ctx, nil)
		if err != nil || len(got.Messages) != 1 {
			t.Fatalf("p: %v, %v", got.Messages, err)
		}
		m := got.Messages[0]
		upd, err := q.UpdateMessage(ctx, *m.MessageID, *m.PopReceipt, "changed", nil)
		if err != nil {
			t.Fatalf("u: %v", err)
		}
		if _, err := q.DeleteMessage(ctx, *m.MessageID, *upd.PopReceipt, nil); err != nil {
			t.Fatalf("p (delete): %v", err)
		}
		// Never with a queue SAS: clearing, metadata, the ACL, creating and deleting. The
		// real service refuses them with its generic code (the Go SDK's live tests create a
		// queue with a queue SAS and expect AuthorizationFailure).
		_, err = q.ClearMessages(ctx, nil)
		wantAzureError(t, err, 403, "AuthorizationFailure")
		_, err = q.SetMetadata(ctx, nil)
		wantAzureError(t, err, 403, "AuthorizationFailure")
		_, err = q.GetAccessPolicy(ctx, nil)
		wantAzureError(t, err, 403, "AuthorizationFailure")
		_, err = q.Delete(ctx, nil)
		wantAzureError(t, err, 403, "AuthorizationFailure")
		_, err = q.Create(ctx, nil)
		wantAzureError(t, err, 403, "AuthorizationFailure")

		addOnly, err := owner.GetSASURL(sas.QueuePermissions{Add: true}, expiry, nil)
		if err != nil {
			t.Fatal(err)
		}
		q = queueSASClient(t, addOnly)
		if _, err := q.EnqueueMessage(ctx, "added", nil); err != nil {
			t.Fatal(err)
		}
		_, err = q.DequeueMessage(ctx, nil)
		wantAzureError(t, err, 403, "AuthorizationPermissionMismatch")
		_, err = q.PeekMessages(ctx, nil)
		wantAzureError(t, err, 403, "AuthorizationPermissionMismatch")

		// The SAS of one queue does not open another.
		parts, err := azqueue.ParseURL(raup)
		if err != nil {
			t.Fatal(err)
		}
		parts.QueueName = "other"
		_, err = queueSASClient(t, parts.String()).EnqueueMessage(ctx, "x", nil)
		wantAzureError(t, err, 403, "AuthenticationFailed")

		expired, err := owner.GetSASURL(sas.QueuePermissions{Read: true}, time.Now().Add(-time.Minute), nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = queueSASClient(t, expired).PeekMessages(ctx, nil)
		wantAzureError(t, err, 403, "AuthenticationFailed")
	})
}

func TestQueueSASWithStoredPolicy(t *testing.T) {
	forEachQueueBackend(t, func(t *testing.T, s *queueServer) {
		ctx := context.Background()
		owner := s.newQueue(t, "jobs")
		if _, err := owner.EnqueueMessage(ctx, "m", nil); err != nil {
			t.Fatal(err)
		}
		acl := []*azqueue.SignedIdentifier{{ID: to.Ptr("readers"), AccessPolicy: &azqueue.AccessPolicy{
			Expiry: to.Ptr(time.Now().Add(time.Hour).UTC()), Permission: to.Ptr("r"),
		}}}
		if _, err := owner.SetAccessPolicy(ctx, &azqueue.SetAccessPolicyOptions{QueueACL: acl}); err != nil {
			t.Fatal(err)
		}
		params, err := sas.QueueSignatureValues{QueueName: "jobs", Identifier: "readers", Protocol: sas.ProtocolHTTPSandHTTP}.SignWithSharedKey(sharedKey(t))
		if err != nil {
			t.Fatal(err)
		}
		q := queueSASClient(t, s.url+"/jobs?"+params.Encode())
		if p, err := q.PeekMessages(ctx, nil); err != nil || len(p.Messages) != 1 {
			t.Fatalf("peek under the policy: %v, %v", p.Messages, err)
		}
		_, err = q.EnqueueMessage(ctx, "x", nil)
		wantAzureError(t, err, 403, "AuthorizationPermissionMismatch")

		params, err = sas.QueueSignatureValues{QueueName: "jobs", Identifier: "nobody", Protocol: sas.ProtocolHTTPSandHTTP}.SignWithSharedKey(sharedKey(t))
		if err != nil {
			t.Fatal(err)
		}
		_, err = queueSASClient(t, s.url+"/jobs?"+params.Encode()).PeekMessages(ctx, nil)
		wantAzureError(t, err, 403, "AuthenticationFailed")
	})
}

func TestAccountSASOnTheQueueService(t *testing.T) {
	forEachQueueBackend(t, func(t *testing.T, s *queueServer) {
		ctx := context.Background()
		s.newQueue(t, "jobs")
		expiry := time.Now().Add(time.Hour)
		sasURL := func(rt sas.AccountResourceTypes, p sas.AccountPermissions) *azqueue.ServiceClient {
			u, err := s.service.GetSASURL(rt, p, expiry, nil)
			if err != nil {
				t.Fatal(err)
			}
			c, err := azqueue.NewServiceClientWithNoCredential(u, queueNoRetry)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		objects := sasURL(sas.AccountResourceTypes{Object: true}, sas.AccountPermissions{Add: true, Process: true, Read: true})
		q := objects.NewQueueClient("jobs")
		if _, err := q.EnqueueMessage(ctx, "m", nil); err != nil {
			t.Fatalf("srt=o sp=a: %v", err)
		}
		if got, err := q.DequeueMessage(ctx, nil); err != nil || len(got.Messages) != 1 {
			t.Fatalf("srt=o sp=p: %v, %v", got.Messages, err)
		}
		_, err := q.ClearMessages(ctx, nil)
		wantAzureError(t, err, 403, "AuthorizationPermissionMismatch")
		_, err = objects.CreateQueue(ctx, "new", nil)
		wantAzureError(t, err, 403, "AuthorizationResourceTypeMismatch")

		manage := sasURL(sas.AccountResourceTypes{Service: true, Container: true}, sas.AccountPermissions{List: true, Create: true, Delete: true})
		if _, err := manage.CreateQueue(ctx, "new", nil); err != nil {
			t.Fatalf("srt=c sp=c: %v", err)
		}
		pager := manage.NewListQueuesPager(nil)
		page, err := pager.NextPage(ctx)
		if err != nil || len(page.Queues) != 2 {
			t.Fatalf("srt=s sp=l: %v, %v", page.Queues, err)
		}
		if _, err := manage.DeleteQueue(ctx, "new", nil); err != nil {
			t.Fatalf("srt=c sp=d: %v", err)
		}
		_, err = manage.NewQueueClient("jobs").EnqueueMessage(ctx, "m", nil)
		wantAzureError(t, err, 403, "AuthorizationResourceTypeMismatch")
	})
}
