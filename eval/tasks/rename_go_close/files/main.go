package main

import (
	"log"
	"net"
)

func main() {
	pool := &Pool{addr: "localhost:6379"}
	conn, err := net.Dial("tcp", pool.addr)
	if err != nil {
		log.Fatal(err)
	}
	pool.conns = append(pool.conns, conn)
	defer pool.Close()
	probe, err := net.Dial("tcp", pool.addr)
	if err == nil {
		probe.Write([]byte("PING\r\n"))
		conn.Close()
	}
}
