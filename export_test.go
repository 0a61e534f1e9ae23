package herald

// InsertCounts returns how many of c's batches the plain insert stored, and
// how many it failed on a key that existed (see accept.Optimism): for
// tests of package herald_test.
func InsertCounts(c *Client) (fresh, fellBack int64) { return c.optimism.Counts() }
