"""The flexzone and flexzone-rtr command-line clients. They speak REST over mutual TLS only."""
