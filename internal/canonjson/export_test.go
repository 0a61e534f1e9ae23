package canonjson

// What this package's tests, in package canonjson_test so that they can
// import canonjsonref, check against the reference but callers do not use.
var (
	ValidJSON       = validJSON
	JSONBSafeNumber = jsonbSafeNumber
)
