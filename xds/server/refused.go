package server

// RefusedPrefix starts a PublishErrors message for a config refused before
// publishing (validation); any other message is a proxy's NACK.
const RefusedPrefix = "config not published: "
