module example.com/retry

go 1.21
