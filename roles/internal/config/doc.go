// Package config finds boxmaker's home and reads config.toml strictly: an
// unknown key is an error naming the key and its line, and every key has a
// sane default except the llama-server upstream.
//
// config must never read secrets (it only names them) or write anything.
package config
