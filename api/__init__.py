"""REST API (DRF): serializers, viewsets, mutual-TLS authentication and permissions."""
