package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

const retryHelp = "Makes waiting deliveries due now through the running server's admin API:\n" +
	"each delivery ID given, or with -destination every delivery to NAME that waits\n" +
	"for its next retry. Their attempts and their step in the retry\n" +
	"schedule are kept; the destination's concurrency paces them. A dead delivery is\n" +
	"replayed (hookbox replay), not retried; a delivered one has nothing to retry.\n" +
	"-json prints the server's answers, one per line."

func runRetry(_ context.Context, c *command, args []string, stdout, stderr io.Writer) int {
	fs := c.flags()
	opts := adminFlags(fs)
	dest := fs.String("destination", "", "retry every waiting delivery to this destination")
	asJSON := fs.Bool("json", false, "print the server's JSON answers")
	ids, code := c.parse(fs, args, stdout, stderr)
	if code >= 0 {
		return code
	}
	if (*dest == "") == (len(ids) == 0) {
		fmt.Fprintln(stderr, "hookbox retry: give delivery ids or -destination NAME, not both or neither (the ids are on the status page's event pages and in hookbox replay's output)")
		return 2
	}
	for _, id := range ids {
		if _, err := strconv.ParseUint(id, 10, 64); err != nil {
			fmt.Fprintf(stderr, "hookbox retry: %q is not a delivery id: give the number shown as #N on the status page\n", id)
			return 2
		}
	}
	api, err := newAdminAPI("retry", opts, 30*time.Second)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if *dest != "" {
		return retryDestination(api, *dest, *asJSON, stdout, stderr)
	}
	code = 0
	for _, id := range ids {
		if !retryDelivery(api, id, *asJSON, stdout, stderr) {
			code = 1
		}
	}
	return code
}

// retryAnswer is what the server answers a retry of one delivery.
type retryAnswer struct {
	Retried  int `json:"retried"`
	Delivery struct {
		ID          uint64 `json:"id"`
		Destination string `json:"destination"`
		Event       struct {
			Seq    uint64 `json:"seq"`
			Source string `json:"source"`
			ID     string `json:"id"`
			Topic  string `json:"topic"`
		} `json:"event"`
	} `json:"delivery"`
	Note  string `json:"note"`
	Error string `json:"error"`
}

// retryDelivery asks the server to retry delivery id now and says what
// came of it; false when it was refused or failed.
func retryDelivery(api *adminAPI, id string, asJSON bool, stdout, stderr io.Writer) bool {
	resp, err := api.do(http.MethodPost, "/deliveries/"+id+"/retry")
	if err != nil {
		fmt.Fprintln(stderr, err)
		return false
	}
	body := readAnswer(resp.Body)
	resp.Body.Close()
	var a retryAnswer
	jsonErr := json.Unmarshal([]byte(body), &a)
	if asJSON && jsonErr == nil {
		fmt.Fprintln(stdout, body)
		return resp.StatusCode == http.StatusOK
	}
	switch {
	case resp.StatusCode == http.StatusOK && jsonErr == nil:
		d := a.Delivery
		name := fmt.Sprintf("delivery #%d %s ← %s/%s %s", d.ID, d.Destination, d.Event.Source, d.Event.ID, d.Event.Topic)
		if d.Event.Source == "" {
			name = fmt.Sprintf("delivery #%d %s ← event %d", d.ID, d.Destination, d.Event.Seq)
		}
		switch {
		case a.Retried > 0 && a.Note != "":
			fmt.Fprintf(stdout, "retried %s: %s\n", name, a.Note)
		case a.Retried > 0:
			fmt.Fprintf(stdout, "retried %s: due now\n", name)
		default:
			fmt.Fprintf(stdout, "%s: due already or being sent, nothing to bring forward; it goes out as soon as %s has a free slot\n", name, d.Destination)
		}
		return true
	case resp.StatusCode == http.StatusNotFound:
		fmt.Fprintf(stderr, "hookbox retry: there is no delivery #%s on this server: check the id on the status page\n", id)
	case resp.StatusCode == http.StatusConflict && a.Error != "":
		fmt.Fprintf(stderr, "hookbox retry: %s\n", a.Error)
	default:
		fmt.Fprintf(stderr, "hookbox retry: the server answered %d to the retry of delivery #%s: %s\n", resp.StatusCode, id, body)
	}
	return false
}

// retryDestination asks the server to retry every waiting delivery to
// dest now and says how many.
func retryDestination(api *adminAPI, dest string, asJSON bool, stdout, stderr io.Writer) int {
	resp, err := api.do(http.MethodPost, "/destinations/"+url.PathEscape(dest)+"/retry")
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	body := readAnswer(resp.Body)
	resp.Body.Close()
	var a struct {
		Retried     int `json:"retried"`
		Concurrency int `json:"concurrency"`
	}
	jsonErr := json.Unmarshal([]byte(body), &a)
	switch {
	case resp.StatusCode == http.StatusOK && asJSON:
		fmt.Fprintln(stdout, body)
	case resp.StatusCode == http.StatusOK && jsonErr == nil:
		switch a.Retried {
		case 0:
			fmt.Fprintf(stdout, "no delivery to %s waits for a retry: nothing to bring forward\n", dest)
		case 1:
			fmt.Fprintf(stdout, "retried 1 delivery to %s: due now\n", dest)
		default:
			fmt.Fprintf(stdout, "retried %d deliveries to %s: due now, sent %d at a time (its concurrency)\n", a.Retried, dest, a.Concurrency)
		}
	case resp.StatusCode == http.StatusNotFound:
		fmt.Fprintf(stderr, "hookbox retry: the running server has no destination named %q: check [[destination]] name in its config\n", dest)
		return 1
	default:
		fmt.Fprintf(stderr, "hookbox retry: the server answered %d to the retry of %s: %s\n", resp.StatusCode, dest, body)
		return 1
	}
	return 0
}
