package auth

import "fmt"

// The operations of the Queue service (queue.md §2.3–2.4). A queue SAS reaches messages and
// the queue's metadata (r) only: never creating, deleting, listing or clearing queues,
// setting metadata or the ACL.
var (
	OpGetQueueServiceProperties = queueServiceOp("Get Queue Service Properties", "r")
	OpSetQueueServiceProperties = queueServiceOp("Set Queue Service Properties", "w")
	OpGetQueueServiceStats      = queueServiceOp("Get Queue Service Stats", "r")
	OpListQueues                = queueServiceOp("List Queues", "l")

	OpCreateQueue      = &Operation{Name: "Create Queue", Service: Queue, ResourceType: 'c', Permissions: []string{"cw"}}
	OpDeleteQueue      = &Operation{Name: "Delete Queue", Service: Queue, ResourceType: 'c', Permissions: []string{"d"}}
	OpGetQueueMetadata = &Operation{Name: "Get Queue Metadata", Service: Queue, ResourceType: 'c', Permissions: []string{"r"}, ServicePermissions: []string{"r"}}
	OpSetQueueMetadata = &Operation{Name: "Set Queue Metadata", Service: Queue, ResourceType: 'c', Permissions: []string{"w"}}
	OpGetQueueACL      = &Operation{Name: "Get Queue ACL", Service: Queue, ResourceType: 'c'} // account key only
	OpSetQueueACL      = &Operation{Name: "Set Queue ACL", Service: Queue, ResourceType: 'c'}

	OpPutMessage    = messageOp("Put Message", "a")
	OpGetMessages   = messageOp("Get Messages", "p")
	OpPeekMessages  = messageOp("Peek Messages", "r")
	OpDeleteMessage = messageOp("Delete Message", "p")
	OpUpdateMessage = messageOp("Update Message", "u")
	OpClearMessages = &Operation{Name: "Clear Messages", Service: Queue, ResourceType: 'o', Permissions: []string{"d"}}
)

// QueueOperations are the operations a Queue request is logged, counted and matched by
// fault rules under: the HTTP layer notes one of these for each request.
var QueueOperations = []*Operation{
	OpGetQueueServiceProperties, OpSetQueueServiceProperties, OpGetQueueServiceStats, OpListQueues,
	OpGetQueueUserDelegationKey,
	OpCreateQueue, OpDeleteQueue, OpGetQueueMetadata, OpSetQueueMetadata, OpGetQueueACL, OpSetQueueACL,
	OpPutMessage, OpGetMessages, OpPeekMessages, OpDeleteMessage, OpUpdateMessage, OpClearMessages,
}

func queueServiceOp(name string, letters string) *Operation {
	return &Operation{Name: name, Service: Queue, ResourceType: 's', Permissions: []string{letters}}
}

func messageOp(name string, letters string) *Operation {
	return &Operation{Name: name, Service: Queue, ResourceType: 'o', Permissions: []string{letters}, ServicePermissions: []string{letters}}
}

// queueSAS is what a queue SAS covers: the queue whose name it signed, taken from the
// request's path, so a request for another queue never gets this far.
type queueSAS struct{ queue string }

func (s *queueSAS) covers(op *Operation, t Target) error {
	if t.Name != s.queue {
		return authenticationFailed(fmt.Sprintf("The SAS is for queue %q, not %q.", s.queue, t.Name))
	}
	return nil
}
