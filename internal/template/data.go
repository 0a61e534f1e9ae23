package template

import (
	"bytes"
	"encoding/json"
)

// DecodeData decodes a JSON object of template data, keeping numbers as
// written (json.Number), so that 10.50 renders as 10.50.
func DecodeData(raw []byte) (map[string]any, error) {
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		return nil, err
	}
	return m, nil
}
