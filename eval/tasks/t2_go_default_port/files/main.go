package main

import (
	"fmt"

	"example.com/srv/config"
)

func main() {
	fmt.Println(config.DefaultPort)
}
