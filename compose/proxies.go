package compose

// Proxies: an embedded toxiproxy with one proxy in front of every node.
// (Placeholder type; the implementation is being written.)
type Proxies struct{}
