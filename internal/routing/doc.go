// Package routing is herald's routing data: providers (named instances of a
// channel's drivers) and the ordered rules that choose one per route, as
// the declarative file `herald providers apply -f FILE` gives them, as
// herald.providers and herald.routing_rules hold them, and as the
// dispatcher evaluates them.
//
// # The file
//
//	providers:
//	  - name: sms/acme            # <channel>/<name>
//	    driver: sms-http          # webhook | smtp | sms-http | log | discard
//	    concurrency: 16           # per serve process; 0/absent: the channel's
//	    cap_per_second: 200       # across every serve process; 0/absent: no cap
//	    timeout: 10s
//	    circuit: {failure_ratio: 0.5, min_attempts: 20, cooldown: 30s}
//	    sms_http: {url: "https://api.acme.example/v1/sms", api_key: {env: ACME_KEY}, from: HERALD}
//	rules:
//	  sms:
//	    - name: kenya
//	      match: {prefixes: ["+254"], producers: [shop], types: [otp.sent], priorities: [transactional]}
//	      strategy: failover      # failover (default) | weighted
//	      providers: [sms/acme, sms/backup]
//	    - name: default
//	      strategy: weighted
//	      providers: [sms/acme, sms/backup]
//	      weights: [80, 20]
//
// Driver sections are the channel packages' own settings (webhook.Settings,
// email.Settings, sms.Settings, smppch.Settings), the same a channel of
// serve's configuration file has; credentials are references
// ({env: NAME} or {file: PATH}), stored and shown as such and read only by
// serve. [Parse] refuses a bad file whole with one line naming the field
// ("providers[1].sms_http.url: required").
//
// # Where it lives
//
// [Apply] writes a file through herald.routing_apply: every provider and
// rule replaced in one transaction, audited, diffed ([Change]), with a dry
// run. [Load] reads it back as a [Table], in one REPEATABLE READ
// transaction, with the version each apply bumps ([ReadVersion] polls it).
//
// # Rules
//
// [Table.Pick] takes a route where its destination is known. The first rule
// of the route's channel (in file order) whose every given matcher matches
// decides; an empty matcher matches anything:
//
//   - prefixes: sms, the E.164 number starts with one ("+254"); email, a
//     prefix "@example.com" matches the address's domain exactly, any other
//     the start of the whole address (both ignoring case); webhook, the URL
//     starts with one.
//   - producers, types, priorities (transactional, bulk): the route's is
//     one of them.
//
// A channel without rules gives [Decision.NoRules]: the dispatcher keeps
// the channel's one configured driver. A channel with rules none of which
// match gives a [*NoRouteError] ([ErrNoRoute]).
//
// failover takes the rule's providers in order: the first for a route's
// first attempt, the one after the last attempt's provider (wrapping) after
// a transient failure, skipping providers whose circuit is open. weighted
// picks by weight among the providers whose circuit is closed, avoiding
// the last attempt's provider when another is available. When every
// provider of the rule has its circuit open, [Decision.AllOpen] says so
// (with the provider that would be used) so that the route waits.
// [Decision.Wrap] says that every provider of the rule with a closed
// circuit has been tried since the route's last wrap: the dispatcher backs
// off only then, so a failover to the next provider is immediate.
package routing
