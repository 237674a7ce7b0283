package main

import "net"

// Pool holds open connections to one address.
type Pool struct {
	addr  string
	conns []net.Conn
}

// Close closes every connection in the pool.
func (p *Pool) Close() error {
	var first error
	for _, c := range p.conns {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	p.conns = nil
	return first
}
