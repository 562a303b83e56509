package controllers

// Write is write, for the tests that run it against a real apiserver.
var Write = write
