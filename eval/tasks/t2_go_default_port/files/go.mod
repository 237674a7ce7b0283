module example.com/srv

go 1.21
