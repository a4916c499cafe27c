"""Access: principals, client certificates (the CA, the CRL), authentication, authorization and
the audit trail."""
