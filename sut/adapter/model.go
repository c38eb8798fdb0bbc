package adapter

// The adapter file's model. Every field carries its YAML name; a field
// tagged adapter:"required" must be present. docs/adapter.schema.json
// describes the same fields (a test keeps the two in step).

// File is one adapter file as loaded and checked by Load.
type File struct {
	// Name names the system under test in reports; default: the file's
	// base name without extension.
	Name string `yaml:"name"`
	// HashTag is the key-naming rule: a template whose rendering, wrapped
	// in braces, is ${tag} (e.g. "shop:${activity}:${bucket}" gives
	// ${tag} = {shop:a1:3}). Keys that share ${tag} share one cluster slot.
	HashTag string `yaml:"hash_tag"`
	// Reserve is the reserve script and how it is called (required).
	Reserve *Call `yaml:"reserve" adapter:"required"`
	// Release gives one reservation's unit back (optional).
	Release *Call `yaml:"release"`
	// Setup creates one bucket of the activity with its stock (optional:
	// without it the activity is set up by other means).
	Setup *Setup `yaml:"setup"`
	// Teardown names exactly the keys the activity created (optional).
	Teardown *Teardown `yaml:"teardown"`
	// State names the reads the checks need (optional, each part too).
	State *State `yaml:"state"`
	// Preflight is how the pre-flight's findings weigh on the load:
	// absent, the load is refused only for what Redis itself refused on a
	// sample call (CROSSSLOT, a key on another node, a script error), and
	// a key outside KEYS that Redis ran fails A1 while the load runs;
	// "strict": every finding refuses the load (as --strict-preflight).
	Preflight string `yaml:"preflight"`

	// Path is the file as given to Load; Dir the directory script paths
	// are relative to.
	Path string `yaml:"-"`
	Dir  string `yaml:"-"`

	lines   map[string]int // field path ("reserve.keys[2]") -> line
	scripts map[string]*Script
	tmpl    compiled
}

// Call is one script and how the harness calls it.
type Call struct {
	// Script is the Lua file, relative to the adapter file (required).
	Script string `yaml:"script" adapter:"required"`
	// Keys are the KEYS, in order, as templates.
	Keys []string `yaml:"keys"`
	// Args are the ARGV, in order, as templates.
	Args []string `yaml:"args"`
	// BuiltKeys are the keys the script builds itself instead of taking
	// them from KEYS (a KEYS entry that is only the hash tag, the script
	// appending ":stock"), as templates over the values keys may use.
	// They join teardown.keys and state.expiring_keys (the teardown
	// removes them, K1 reads their expiries); the pre-flight still fails
	// A1 on every one, and says which keys it saw that are not listed.
	BuiltKeys []string `yaml:"built_keys"`
	// Reply says how a reply maps to outcomes (required).
	Reply *Reply `yaml:"reply" adapter:"required"`
}

// Reply maps a script's reply to the harness's outcomes.
type Reply struct {
	// Code is the 1-based element of an array reply that holds the
	// outcome; 0 (or absent): the whole reply (an integer or a string).
	Code int `yaml:"code"`
	// ReservationID is the 1-based element of an array reply that holds
	// the reservation id; 0 (or absent): an ACCEPTED answer's reservation
	// is the id the call sent (${reservation}).
	ReservationID int `yaml:"reservation_id"`
	// Outcomes maps each outcome name to the reply values that mean it
	// (required). A value is an integer or a string, compared as text, or
	// a comparison over integers: ">0", ">=1", "<0", "<=-1"; nil is a nil
	// reply. No value may match two outcomes.
	Outcomes map[string][]string `yaml:"outcomes" adapter:"required"`
	// Otherwise is the outcome of a value no entry matches; absent: such
	// a reply is an error (the mapping is incomplete).
	Otherwise string `yaml:"otherwise"`
}

// Setup creates one bucket of the activity: either Commands, run in
// order, or Script called with Keys and Args. It runs once per bucket.
type Setup struct {
	// Commands are Redis commands, each a list of templates (the command
	// name first).
	Commands [][]string `yaml:"commands"`
	// Script is a Lua file, relative to the adapter file, called with Keys
	// and Args.
	Script string   `yaml:"script"`
	Keys   []string `yaml:"keys"`
	Args   []string `yaml:"args"`
}

// Teardown lists the keys the activity created, as templates: a template
// over bucket values is removed for every bucket; one over a user, request
// or reservation for every one the run reached.
type Teardown struct {
	Keys []string `yaml:"keys" adapter:"required"`
}

// State names the reads the checks need; each is a Redis command (a list
// of templates, the command name first) and each is optional.
type State struct {
	// Available reads a bucket's available units (an integer reply).
	Available []string `yaml:"available"`
	// Held reads a bucket's held (reserved, not released) units.
	Held []string `yaml:"held"`
	// UserHold reads whether a user holds a reservation in a bucket (a
	// reply that is not nil, 0 or "" means it does).
	UserHold []string `yaml:"user_hold"`
	// Record reads whether a reservation's record exists (same truth rule).
	Record []string `yaml:"record"`
	// ExpiringKeys are the keys that must carry a TTL, as templates
	// (expanded like Teardown's).
	ExpiringKeys []string `yaml:"expiring_keys"`
}

// Script is one Lua file the adapter names, read when the file is loaded.
type Script struct {
	Path   string // as resolved (relative to the adapter file's directory)
	Source string
	SHA1   string
}
