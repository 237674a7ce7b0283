module example.com/fetcher

go 1.21
