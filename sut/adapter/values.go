package adapter

import "seckill-harness/lua"

// ActivityValues are the values of bucket b of activity a (setup, state
// reads and teardown).
func ActivityValues(a *lua.Activity, b uint32) Values {
	return Values{
		Activity: a.ID, SKU: a.SKU, Version: a.Version, Bucket: b, Stock: a.BucketStock(b),
		StartsAtMs: a.StartsAtMs, EndsAtMs: a.EndsAtMs, RetentionUntilMs: a.RetentionUntilMs,
		SchemaVersion: a.SchemaVersion,
	}
}

// CallValues are the values of one reserve call of activity a: its ids,
// TTL and clock (call.NowMs; 0 means "the script reads Redis TIME" in the
// reference contract, so a caller that wants the harness's clock in
// ${now_ms} sets it), and one unit.
func CallValues(a *lua.Activity, call lua.ReserveCall) Values {
	v := ActivityValues(a, call.Scope.Bucket)
	v.Version = call.Scope.Version
	v.User, v.Request, v.Reservation, v.Message = call.UserID, call.RequestID, call.ReservationID, call.MessageID
	v.Amount, v.NowMs, v.TTLMs = 1, call.NowMs, call.TTLMs
	if call.SchemaVersion != "" {
		v.SchemaVersion = call.SchemaVersion
	}
	return v
}

// SetupCommands renders the setup of bucket v.Bucket: the commands, each
// a Redis command line, or (when the file sets up with a script) nil and
// that script's KEYS and ARGV. ok is false when the file has no setup.
func (f *File) SetupCommands(v Values) (cmds [][]string, keys, args []string, ok bool, err error) {
	if f.Setup == nil {
		return nil, nil, nil, false, nil
	}
	tag, err := f.Tag(v)
	if err != nil {
		return nil, nil, nil, true, err
	}
	if f.Setup.Script != "" {
		if keys, err = f.renderAll(f.tmpl.setup[0], &v, tag); err == nil {
			args, err = f.renderAll(f.tmpl.setup[1], &v, tag)
		}
		return nil, keys, args, true, err
	}
	for _, ts := range f.tmpl.setup {
		c, err := f.renderAll(ts, &v, tag)
		if err != nil {
			return nil, nil, nil, true, err
		}
		cmds = append(cmds, c)
	}
	return cmds, nil, nil, true, nil
}

// StateRead renders the state read name (available, held, user_hold,
// record) with v; ok is false when the file does not declare it.
func (f *File) StateRead(name string, v Values) (cmd []string, ok bool, err error) {
	ts := f.tmpl.reads[name]
	if ts == nil {
		return nil, false, nil
	}
	tag, err := f.Tag(v)
	if err != nil {
		return nil, true, err
	}
	cmd, err = f.renderAll(ts, &v, tag)
	return cmd, true, err
}
