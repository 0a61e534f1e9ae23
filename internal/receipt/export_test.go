package receipt

// SetQueuedFuncs makes g call receipts (inbound) each time a receipt (an
// inbound message) joins the items waiting for g's next group: the signal
// a test waits on to know that every caller has arrived. Call it before g
// stores anything; nil calls nothing.
func (g *Group) SetQueuedFuncs(receipts, inbound func()) {
	g.receipts.queuedFunc = receipts
	g.inbound.queuedFunc = inbound
}
