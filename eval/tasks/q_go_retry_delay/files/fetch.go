package fetcher

import (
	"net/http"
	"time"
)

// Get fetches url, retrying up to three times.
func Get(url string) (*http.Response, error) {
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		var resp *http.Response
		resp, err = http.Get(url)
		if err == nil {
			return resp, nil
		}
		time.Sleep(RetryDelay(attempt))
	}
	return nil, err
}
