package fetcher

import "time"

const (
	baseDelay = 200 * time.Millisecond
	maxDelay  = 5 * time.Second
)

// RetryDelay is how long to wait before retry number attempt (0-based):
// the base delay doubled per attempt, capped at maxDelay.
func RetryDelay(attempt int) time.Duration {
	d := baseDelay << attempt
	if d > maxDelay {
		return maxDelay
	}
	return d
}
