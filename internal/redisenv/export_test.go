package redisenv

// TLSAlertAfterHandshake is tlsAlertAfterHandshake, for the external tests.
var TLSAlertAfterHandshake = tlsAlertAfterHandshake
