package azerr

// The Queue service's codes (shared/spec/queue.md §9). Status and message are Azure's, as
// documented or as recorded from the real service.
const (
	QueueNotFound      Code = "QueueNotFound"
	QueueAlreadyExists Code = "QueueAlreadyExists"
	QueueBeingDeleted  Code = "QueueBeingDeleted"
	QueueDisabled      Code = "QueueDisabled"
	QueueNotEmpty      Code = "QueueNotEmpty"
	MessageNotFound    Code = "MessageNotFound"
	PopReceiptMismatch Code = "PopReceiptMismatch"
	MessageTooLarge    Code = "MessageTooLarge"
	InvalidMarker      Code = "InvalidMarker"
)

func init() {
	for code, d := range map[Code]defaultOf{
		QueueNotFound:      {404, "The specified queue does not exist."},
		QueueAlreadyExists: {409, "The specified queue already exists."},
		QueueBeingDeleted:  {409, "The specified queue is being deleted."},
		QueueDisabled:      {409, "The specified queue has been disabled by the administrator."},
		QueueNotEmpty:      {409, "The specified queue is not empty."},
		MessageNotFound:    {404, "The specified message does not exist."},
		PopReceiptMismatch: {400, "The specified pop receipt did not match the pop receipt for a dequeued message."},
		MessageTooLarge:    {400, "The message exceeds the maximum allowed size."},
		InvalidMarker:      {400, "The specified marker is invalid."},
	} {
		defaults[code] = d
	}
}
