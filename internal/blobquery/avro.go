package blobquery

import (
	"bufio"
	"crypto/rand"
	"encoding/binary"
	"io"
)

// Query Blob Contents answers with an Avro object container file whose records are a union
// of four record types; clients tell them by their full names (the JS SDK's
// BlobQuickQueryStream reads $schema). Each record goes in a block of its own, so a client
// sees it as soon as it is written.
const schema = `[` +
	`{"type":"record","name":"com.microsoft.azure.storage.queryBlobContents.resultData","doc":"Holds result data in the format specified for this query (CSV, JSON, etc.).","fields":[{"name":"data","type":"bytes"}]},` +
	`{"type":"record","name":"com.microsoft.azure.storage.queryBlobContents.error","doc":"An error that occurred while processing the query.","fields":[{"name":"fatal","type":"boolean","doc":"If true, this error prevents further query processing."},{"name":"name","type":"string","doc":"The name of the error"},{"name":"description","type":"string","doc":"A description of the error"},{"name":"position","type":"long","doc":"The blob offset at which the error occurred"}]},` +
	`{"type":"record","name":"com.microsoft.azure.storage.queryBlobContents.progress","doc":"Information about the progress of the query","fields":[{"name":"bytesScanned","type":"long","doc":"The number of bytes that have been scanned"},{"name":"totalBytes","type":"long","doc":"The total number of bytes to be scanned in this query"}]},` +
	`{"type":"record","name":"com.microsoft.azure.storage.queryBlobContents.end","doc":"Sent as the final message of the response, indicating that all results have been sent.","fields":[{"name":"totalBytes","type":"long","doc":"The total number of bytes to be scanned in this query"}]}` +
	`]`

// The union's branches, in the schema's order.
const (
	branchResult = iota
	branchError
	branchProgress
	branchEnd
)

// avroWriter writes the container file: a header, then one block per record.
type avroWriter struct {
	w    *bufio.Writer
	sync [16]byte
	buf  []byte
}

func newAvroWriter(w io.Writer) (*avroWriter, error) {
	a := &avroWriter{w: bufio.NewWriter(w)}
	if _, err := rand.Read(a.sync[:]); err != nil {
		return nil, err
	}
	h := []byte("Obj\x01")
	h = appendLong(h, 2) // the metadata map: one block of two entries
	h = appendBytes(h, []byte("avro.schema"))
	h = appendBytes(h, []byte(schema))
	h = appendBytes(h, []byte("avro.codec"))
	h = appendBytes(h, []byte("null"))
	h = appendLong(h, 0)
	h = append(h, a.sync[:]...)
	_, err := a.w.Write(h)
	return a, err
}

// record writes one block of one record: the union branch, then the record's fields.
func (a *avroWriter) record(branch int64, fields func(b []byte) []byte) error {
	a.buf = fields(appendLong(a.buf[:0], branch))
	block := appendLong(appendLong(nil, 1), int64(len(a.buf)))
	if _, err := a.w.Write(block); err != nil {
		return err
	}
	if _, err := a.w.Write(a.buf); err != nil {
		return err
	}
	if _, err := a.w.Write(a.sync[:]); err != nil {
		return err
	}
	return a.w.Flush()
}

func (a *avroWriter) result(data []byte) error {
	return a.record(branchResult, func(b []byte) []byte { return appendBytes(b, data) })
}

func (a *avroWriter) failure(fatal bool, name, description string, position int64) error {
	return a.record(branchError, func(b []byte) []byte {
		if fatal {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
		b = appendBytes(b, []byte(name))
		b = appendBytes(b, []byte(description))
		return appendLong(b, position)
	})
}

func (a *avroWriter) progress(scanned, total int64) error {
	return a.record(branchProgress, func(b []byte) []byte { return appendLong(appendLong(b, scanned), total) })
}

func (a *avroWriter) end(total int64) error {
	return a.record(branchEnd, func(b []byte) []byte { return appendLong(b, total) })
}

// appendLong appends Avro's long: zig-zag, then a variable-length integer.
func appendLong(b []byte, v int64) []byte {
	return binary.AppendUvarint(b, uint64(v<<1)^uint64(v>>63))
}

// appendBytes appends Avro's bytes (and string): the length, then the bytes.
func appendBytes(b, v []byte) []byte {
	return append(appendLong(b, int64(len(v))), v...)
}
