// Package content is what herald does with the text of a notification
// beyond checking its shape: the content blocklist (Compile, Match) and the
// Checker every door runs between validation and acceptance, which refuses
// an intent a review rule holds and renders a templated intent's every
// locale before it is accepted (the templates themselves are
// internal/template's).
package content
