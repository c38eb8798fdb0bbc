package reports

// KeySpace is report.json's "keyspace" section (additive): the activity's
// keys as the checks read them back after the run, and the size figures a
// capacity run plans memory with. Only keys the path's contract names are
// read (per bucket: meta, stock, soldout, send_pending,
// reservation_expiry, req:000…req:255; the reservation records and user
// markers of the reservations the run reached), never a scan of the
// keyspace.
type KeySpace struct {
	// RetentionUntilMs is the activity's retention time (Unix ms): every
	// key must expire at or before it (check K1).
	RetentionUntilMs int64 `json:"retention_until_ms"`
	// ExpiryRead names how expiries were read: "PEXPIRETIME" (exact,
	// Redis ≥ 7.0) or "PTTL" (older servers: read time + PTTL, compared
	// with a tolerance of ExpirySlackMs).
	ExpiryRead    string `json:"expiry_read"`
	ExpirySlackMs int64  `json:"expiry_slack_ms"`
	// KeysChecked is the number of keys that existed, KeysByKind the same
	// per kind ("meta", "stock", "soldout", "send_pending",
	// "reservation_expiry", "req", "resv", "user").
	KeysChecked int64            `json:"keys_checked"`
	KeysByKind  map[string]int64 `json:"keys_by_kind"`
	// KeysWithoutTTL counts keys with no expiry at all (PEXPIRETIME -1);
	// KeysBeyondRetention those expiring after RetentionUntilMs.
	KeysWithoutTTL      int64 `json:"keys_without_ttl"`
	KeysBeyondRetention int64 `json:"keys_beyond_retention"`
	// LatestExpiryMs is the latest expiry seen (Unix ms; 0: none).
	LatestExpiryMs int64 `json:"latest_expiry_ms"`
	// ExpiryAllowances are the buckets whose keys a fault may have moved
	// to a later absolute expiry, each with the measured allowance K1
	// granted them beyond RetentionUntilMs (empty: none, every key is held
	// to the retention time exactly). KeysWithinAllowance counts the keys
	// that expired after the retention time but within their allowance.
	ExpiryAllowances    []ExpiryAllowance `json:"expiry_allowances,omitempty"`
	KeysWithinAllowance int64             `json:"keys_within_expiry_allowance,omitempty"`

	// RequestShards is the number of request-result hashes (256 per
	// bucket), RequestResults the cached results they hold (sum of HLEN).
	RequestShards  int   `json:"request_shards"`
	RequestResults int64 `json:"request_results"`
	// LargestRequestShard is the request-result hash with the most
	// entries (HLEN) and its MEMORY USAGE (SAMPLES 0: exact).
	LargestRequestShard *RequestShardSize `json:"largest_request_shard,omitempty"`
	// RequestShardSkew is the largest shard's HLEN over the mean HLEN of
	// every shard (1 = perfectly even; 0 when no shard holds anything).
	RequestShardSkew float64 `json:"request_shard_skew"`
	// RequestResultBytes is the largest shard's MEMORY USAGE per entry:
	// what one cached request result costs.
	RequestResultBytes float64 `json:"request_result_bytes"`

	// ReservationsSampled is how many reservation records MEMORY USAGE
	// read (evenly spread over the records found, at most 64).
	ReservationsSampled int `json:"reservations_sampled"`
	// ReservationRecordBytes is their mean MEMORY USAGE, UserMarkerBytes
	// that of their users' one-per-user markers (those still present).
	ReservationRecordBytes float64 `json:"reservation_record_bytes"`
	UserMarkerBytes        float64 `json:"user_marker_bytes"`
	// MemoryPerReservationBytes is ReservationRecordBytes +
	// UserMarkerBytes: the memory one live reservation holds besides its
	// cached request result (RequestResultBytes) and its two zset entries.
	MemoryPerReservationBytes float64 `json:"memory_per_reservation_bytes"`
}

// RequestShardSize is one request-result hash's size.
type RequestShardSize struct {
	Key         string `json:"key"`
	Bucket      int    `json:"bucket"`
	Shard       int    `json:"shard"`
	HLen        int64  `json:"hlen"`
	MemoryBytes int64  `json:"memory_bytes"`
}

// ExpiryAllowance is how much later than the retention time the keys of
// one bucket (one cluster slot) may expire because of what a fault did to
// them, as measured during the run, and why.
type ExpiryAllowance struct {
	Bucket      int    `json:"bucket"`
	Slot        int    `json:"slot"`
	AllowanceMs int64  `json:"allowance_ms"`
	Reason      string `json:"reason"`
}
