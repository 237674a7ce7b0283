package retry

// Backoff is the delay in milliseconds before attempt n (n >= 1).
func Backoff(n int) int {
	delay := 100
	for i := 0; i < n; i++ {
		delay *= 2
	}
	return delay
}
