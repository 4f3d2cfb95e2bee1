package blobfetch

import (
	"context"
	"encoding/xml"
	"io"
	"net/http"

	"github.com/tabula-dev/tabula/internal/blob"
)

// blobTags is a Get Blob Tags answer.
type blobTags struct {
	Tags []struct{ Key, Value string } `xml:"TagSet>Tag"`
}

// Tags reads the tags of the blob rq.URL names (Get Blob Tags, with the URL's SAS and rq's
// version, user agent and Authorization), for a copy that takes its source's tags. A source
// that refuses is the copy's answer, as for Fetch (the SAS must allow reading tags, 't').
func (c *Client) Tags(ctx context.Context, rq Request) (blob.Tags, error) {
	u := *rq.URL
	q := u.Query()
	q.Set("comp", "tags")
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, unreachable(rq.URL, err)
	}
	for _, k := range []string{"X-Ms-Version", "User-Agent", "Authorization"} {
		if v := rq.Header.Get(k); v != "" {
			req.Header.Set(k, v)
		}
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, unreachable(rq.URL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, Refused(resp.StatusCode, resp.Header.Get("x-ms-error-code"), errorMessage(resp))
	}
	var answer blobTags
	if err := xml.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&answer); err != nil {
		return nil, failed("the tags of %s could not be read: %s", Where(rq.URL), err)
	}
	tags := blob.Tags{}
	for _, t := range answer.Tags {
		tags[t.Key] = t.Value
	}
	return tags, nil
}
