package config

// DefaultPort is used when PORT is not set.
const DefaultPort = 8080
