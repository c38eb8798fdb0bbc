package pipeline

// SetCommitHooks installs a test's hooks around every order transaction's
// COMMIT: before runs just before it (an error fails the commit as a lost
// connection would), after runs between the COMMIT and the Redis fence.
func SetCommitHooks(p *Pipeline, before func(messageID string) error, after func(messageID string)) {
	p.commitHooks.Store(&commitHooks{before: before, after: after})
}
