package connstr

// Flag is a flag.Value holding a connection string (-database-url). It
// shows its value, the default taken from the environment included, with
// the password masked (Redact), so that -h and flag errors do not print it.
type Flag string

// String returns the connection string with its passwords masked.
func (f *Flag) String() string {
	if f == nil {
		return ""
	}
	return Redact(string(*f))
}

// Set stores s as it is.
func (f *Flag) Set(s string) error {
	*f = Flag(s)
	return nil
}
