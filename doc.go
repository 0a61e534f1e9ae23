// Package herald is the Go client of herald, a durable notification-intent
// engine that keeps all of its state in PostgreSQL.
//
// A service hands herald an intent ("tell user 42, by SMS and e-mail, that
// order 9 shipped"); herald stores it exactly once, fans it out into one
// route per channel and recipient, delivers every route through a real
// channel, retries what fails for a transient reason, and parks what cannot
// be delivered in herald.dead_letters, where an operator finds it with psql.
//
// This package is the Go door in: [NewClient] on a pgx pool of a database
// migrated with `herald migrate`, then [Client.Submit], [Client.SubmitTx]
// (inside the caller's own transaction), [Client.SubmitMany], [Client.Get],
// [Client.Cancel] and [Client.UpsertRecipient]. Importing it pulls in pgx,
// libphonenumber (github.com/nyaruka/phonenumbers, with protobuf), the
// OpenTelemetry API (go.opentelemetry.io/otel and its trace, metric and log
// API modules: the client's spans join the caller's trace, and cost nothing
// until the program installs an SDK), confusables (the content blocklist's
// look-alike folding), uuid, and golang.org/x/text; nothing of the engine
// (no River, no channel adapters, no Prometheus, no OpenTelemetry SDK or
// exporter).
//
// # The intent
//
// An [Intent] has these fields (its JSON names in brackets, which are also
// the keys of the SQL door's JSON):
//
//   - NotificationType [notification_type], required: what happened, e.g.
//     "order.shipped"; at most 128 characters of letters, digits and . _ : -.
//   - Producer [producer], required: the submitting service; same rules.
//     Idempotency keys are scoped by it.
//   - IdempotencyKey [idempotency_key], required: at most 255 printable
//     characters; see Idempotency below.
//   - Audience [audience], at least one recipient: UserIDs [user_ids]
//     resolved at delivery through the recipient directory, and direct
//     addresses per channel: SMS [sms] (international numbers with a
//     leading "+", checked with libphonenumber, stored in E.164), Email
//     [email] (RFC 5322, stored as a bare address with the domain
//     lower-cased) and Webhook [webhook] (absolute http or https URLs
//     without userinfo).
//   - Channels [channels], required: any of "sms", "email", "webhook" (the
//     values of [ChannelSMS], [ChannelEmail] and [ChannelWebhook]).
//     Each user id gets one route per channel; a direct address must belong
//     to a listed channel.
//   - Content [content]: per listed channel, and only for listed channels:
//     SMS.Body [sms.body] (GSM-7, or UCS-2 if it needs a character GSM-7
//     lacks; at most Limits.MaxSMSSegments segments, 10 by default), Email
//     [email] with Subject [subject] and Text [text] and/or HTML [html],
//     and Webhook [webhook], any JSON value, POSTed as the body. The content
//     as canonical JSON may be at most Limits.MaxPayloadBytes (64 KiB).
//   - OccurredAt [occurred_at]: when the event happened; default: now.
//   - SendAt [send_at]: schedule; default now; at most
//     Limits.MaxScheduleAhead (90 days) ahead.
//   - ExpiresAt [expires_at]: undelivered routes are not attempted after it
//     (an OTP stale after 10 minutes); must be after now and after SendAt.
//   - Priority [priority]: [PriorityTransactional] (default; claimed first)
//     or [PriorityBulk].
//   - MaxAttempts [max_attempts]: 1..100 overrides the channel's attempt
//     budget; 0 (default) means the channel's.
//   - RequestID [request_id] and TraceID [trace_id]: the producer's
//     identifiers, at most 128 characters, stored with the record.
//   - CallbackURL [callback_url]: where this notification's status
//     callbacks go instead of the producer's subscription URL (see
//     [Client.SetCallbackSubscription]); an absolute http(s) URL, checked
//     as a webhook address. The subscription's secret or token signs the
//     callbacks, so a producer without one is refused at submit with
//     callback_url_needs_subscription.
//   - Metadata [metadata]: the producer's own string-to-string map,
//     stored with the notification, returned by [Client.Get] and carried
//     in every status callback; herald never reads it. At most 32 keys of
//     1 to 64 characters of letters, digits and . _ : -, each value valid
//     UTF-8 without U+0000 of at most 512 bytes, the map at most 4 KiB as
//     JSON. Absent or empty stores nothing (NULL).
//     as a webhook address.
//   - FromSender [from_sender]: the sender the SMS routes show instead of
//     the provider's default: 1 to 11 letters and digits (alphanumeric,
//     GSM 03.40) or 1 to 15 digits, international with a leading "+".
//     It must be approved for the producer by an operator (`herald
//     senders approve`); otherwise the intent is refused with
//     sender_not_approved. Only with channel sms; part of the fingerprint
//     when set.
//   - MessageType [message_type]: [MessageTypeSMS] (default) or
//     [MessageTypeFlashSMS], a flash SMS (message class 0: shown at once,
//     not stored). Only with channel sms; a flash SMS is sent only by a
//     provider configured to send flash, never as a normal SMS.
//   - Template [template] and Data [data], instead of Content: see
//     Templates below.
//
// Times are RFC 3339 in JSON and stored to the microsecond. Duplicate
// recipients (after normalization) collapse into one route. Every route has
// a deterministic id, "<channel>:" and 12 hex digits of a hash of the
// recipient, so the same intent always fans out to the same route ids.
//
// # The Go door
//
//	client, err := herald.NewClient(pool, nil)
//	...
//	receipt, err := client.Submit(ctx, &herald.Intent{
//		NotificationType: "order.shipped",
//		Producer:         "shop",
//		IdempotencyKey:   "order-9-shipped",
//		Audience:         herald.Audience{UserIDs: []string{"42"}},
//		Channels:         []string{"sms", "email"},
//		Content: herald.Content{
//			SMS:   &herald.SMSContent{Body: "Order 9 shipped"},
//			Email: &herald.EmailContent{Subject: "Order 9 shipped", Text: "It is on its way."},
//		},
//	})
//
// Submit is one statement, committed on its own: the record, its routes
// and the wake-up hint. SubmitTx runs that statement in the caller's
// pgx.Tx, so the notification commits or rolls back with the caller's own
// writes; every statement names the herald schema, so the caller's
// search_path does not matter. SubmitMany sends any number of intents in
// one statement and one round trip, and returns a [SubmitResult] per
// intent: invalid intents get their error and do not keep the others out.
//
// # The SQL door
//
// Any other language, or a person with psql, INSERTs the same JSON as
// text into herald.intake:
//
//	INSERT INTO herald.intake (body) VALUES ('{
//	  "notification_type": "otp", "producer": "auth", "idempotency_key": "login-77",
//	  "channels": ["sms"], "audience": {"sms": ["+14155550123"]},
//	  "content": {"sms": {"body": "Your code is 123456"}},
//	  "expires_at": "2026-03-01T12:10:00Z"}');
//
// The intake worker of `herald serve`, woken by the table's trigger
// (NOTIFY herald_intake) and polling as a fallback, takes entries in
// batches (FOR UPDATE SKIP LOCKED) and, in one transaction per batch,
// accepts each valid entry through the same validator and the same
// idempotent statement as Submit, or records it in
// herald.malformed_intents (stream_entry_id "intake:<id>", failure_code,
// failure_message, raw_fields, and whatever notification_type, producer
// and idempotency_key could be read), and deletes it from the intake. A
// worker killed mid-batch loses nothing: its transaction rolls back and the
// entries wait for the next one. The SQL door is stricter about shape than
// encoding/json: unknown or repeated fields and wrong JSON types are
// refused.
//
// # Templates
//
// An intent may name a stored template ([TemplateRef]: Name [name],
// Version [version], 0 for the current one, and Locale [locale] for routes
// to direct addresses) and give Data [data], a JSON object of values,
// instead of Content. Templates are a producer's own, versioned and
// immutable, in herald.templates (`herald templates apply -f DIR`). At
// intake the template must exist (unknown_template), have text for every
// listed channel (missing_content), and the data must hold every variable
// it uses (missing_field, e.g. data.order); every locale is rendered with
// the data then, SMS segments included. The notification keeps the version
// it was accepted with; the dispatcher renders it at delivery in the
// recipient's locale from the directory, falling back pt-BR, pt, then the
// template's default, and records the locale used in
// routes.resolved_locale. E-mail HTML is rendered with html/template, so
// data is escaped; data is never executed.
//
// # The content blocklist
//
// Every intent's text (a template's, in every locale) is checked against
// herald.content_rules, words and regular expressions kept by operators,
// after Unicode normalization (NFKC, default-ignorable code points and
// combining marks removed, confusable characters folded to their
// prototypes), so a zero-width space or a Cyrillic homoglyph does not hide
// a word. A refuse rule refuses the intent with content_blocked, naming
// the rule; a review rule holds it: Submit returns a [Receipt] with Held
// and HeldRule, and the client hands the intent to the engine (through
// herald.intake), which checks it again and holds it in
// herald.held_intents until an operator releases it (`herald held
// release`; it is then accepted, its key intact) or rejects it (`herald
// held reject`). The client rereads the rules at most every
// Config.ContentRulesMaxAge.
//
// The client's checks give an early answer; they are not what keeps
// content out. It runs in the producer's process, so the database marks
// every route a producer's login stores (lane '!vet') and the engine
// checks it again before any dispatcher may claim it: the blocklist, the
// SMS segment cap, the size limit and the intent's campaign. What fails
// becomes a dead letter (content_blocked and the like), is canceled, or is
// held for review; what passes is delivered.
//
// # Idempotency
//
// The UNIQUE (producer, idempotency_key) constraint on herald.records is
// the check, so it holds across processes and however many callers race.
// Each intent's request fingerprint is a SHA-256 of its normalized
// canonical form (everything but request_id, trace_id, callback_url and
// occurred_at, with lists sorted); metadata counts only when present, so an
// intent without it keeps the fingerprint it always had. The same key with the same fingerprint returns the
// original notification with [Receipt].Duplicate set and stores nothing;
// the same key with a different fingerprint is a [*ConflictError] naming
// the existing notification (errors.Is [ErrIdempotencyConflict]) from the
// Go door, and a malformed entry with code idempotency_conflict from the
// SQL door. A key stays reserved for Config.IdempotencyWindow (48 hours by
// default) after acceptance, recorded as idempotency_expires_at; after it
// the key is free, and the same key is a new notification.
//
// # Errors
//
// A refused intent is a [*ValidationError] listing every [FieldError]
// found: the field's JSON path (e.g. "audience.sms[2]"), a stable code and
// a message that never repeats an address. The codes, shared by both doors:
//
//	not_json               the intake entry is not JSON in UTF-8 (SQL door)
//	wrong_shape            JSON, but not an intent object: not an object, an unknown
//	                       or repeated field, a field of the wrong type (SQL door)
//	too_large              an intake entry over 256 KiB (recorded from its size and
//	                       first 4 KiB; never loaded whole), or content over
//	                       MaxPayloadBytes
//	missing_field          a required field is absent or empty
//	invalid_field          a bad format, length, enum value or range
//	unknown_channel        a channel other than sms, email, webhook
//	invalid_phone          not a valid international number with a leading +
//	invalid_email          not an RFC 5322 address
//	invalid_url            not an absolute http(s) URL with a host
//	missing_content        a listed channel has no content
//	sms_too_long           the SMS body needs more than MaxSMSSegments segments
//	schedule_out_of_range  send_at too far ahead, or expires_at not after now/send_at
//	too_many_routes        the intent fans out to more than MaxRoutes routes
//	idempotency_conflict   the key holds a different request (SQL door; the Go
//	                       door returns *ConflictError)
//	rejected_by_database   valid, but the database refused it (SQL door only: the
//	                       worker sets it aside with the database's message)
//	producer_mismatch      the entry names a producer other than the login that
//	                       inserted it, a login neither herald_relay's nor the
//	                       engine's (SQL door only; nothing of it is accepted)
//	unknown_template       the template (or version) named is not the producer's
//	content_blocked        the text matches a content blocklist rule (refuse mode),
//	                       or an operator rejected it after review
//	campaign_canceled      the intent names a campaign whose cancel was requested
//	callback_url_needs_subscription  the intent has a callback_url, but its
//	                       producer has no callback subscription to sign the
//	                       callbacks: subscribe first (SetCallbackSubscription)
//	sender_not_approved    from_sender is not a sender approved for the producer
//
// [ErrNotFound] is returned by Get and Cancel for an unknown id (or one
// the login may not see). [ErrForbidden] is matched by the error for an
// intent or directory entry the login may not write. Other errors are the
// database's, wrapped.
//
// # Wake-up hints
//
// Two NOTIFY topics wake herald's processes: herald_intake, sent once per
// INSERT statement into herald.intake, wakes the intake worker, and
// herald_routes, sent by the accept path with the delivery channel of the
// new routes as payload ("" when several), wakes the dispatchers. Each
// topic's name ends in a random secret of the database that producers
// cannot read (herald.notify_topic), so a producer's LISTEN hears nothing;
// Submit notifies through herald.routes_wake, which knows the name. The
// herald_routes hint of Submit and SubmitMany is debounced in each client:
// the first submit of a quiet period sends it inside its own statement,
// submits in the following Config.NotifyDebounce (5 ms) send none, and one
// trailing NOTIFY follows at the end of the window. SubmitTx always sends
// its hint inside the caller's transaction, so it is delivered when that
// transaction commits and never for a rollback (a trailing hint could
// arrive before the caller's commit). A burst thus costs at most 200
// NOTIFYs a second instead of one per submit: every notifying transaction
// serializes on PostgreSQL's notification queue lock at commit. The hint
// only cuts latency; dispatchers also poll.
//
// # Reading and canceling
//
// [Client.Get] returns a [Notification] with every route's status,
// attempts, last error and timestamps. [Client.Cancel] moves the routes
// that are not terminal yet to canceled and writes a herald.audit_log row
// (action "cancel", the actor and reason, and the database login) in the
// same statement, through the function herald.notification_cancel.
//
// # Campaigns
//
// An intent may name a campaign ([Intent].Campaign, an id of the
// producer's choosing): the producer's intents of one campaign are
// scheduled, shown and canceled as one. The first intent accepted creates
// the campaign with its SendAt (zero: at once); every later one must carry
// the same SendAt, or it is refused with invalid_field on send_at, so a
// SubmitMany of a campaign with a send_at schedules it as one.
// [Client.Campaign] and [Client.Campaigns] return each campaign's
// [CampaignState] and its routes by where they stand (pending, published,
// delivered by the receipts, dead, canceled); SQL users read
// herald.campaign_progress_view.
//
// [Client.CancelCampaign] cancels every route of a campaign that has not
// gone out, batch after batch (5,000 notifications each), each batch a
// short transaction of its own with an audit_log row (action
// "campaign_cancel"), so canceling a million routes holds no long
// transaction and other campaigns are delivered meanwhile. A route a
// dispatcher is delivering is left to finish and, if it fails, canceled by
// a later sweep: a route is either delivered or canceled, never both. From
// the first batch on, an intent of the campaign is refused with
// campaign_canceled. An interrupted cancel resumes where it stopped when
// run again; from psql, CALL herald.campaign_cancel(producer, campaign,
// actor, reason) does the same, committing after each batch. A producer's
// login sees and cancels its own campaigns only; an operator's, any.
// Intents without a campaign pay nothing of this: their routes and the
// dispatcher's statements are unchanged.
//
// # The recipient directory
//
// Routes addressed to a user id resolve at delivery through
// herald.recipients: e-mail, phone, webhook URL, locale and the channels the
// user opted out of, validated with the intent's rules. Every entry belongs
// to someone. A producer keeps its own with [Client.UpsertRecipient] and
// [Client.DeleteRecipient]; a service that owns user data, with a login
// granted herald_directory, keeps the shared directory with
// [Client.UpsertSharedRecipient] and [Client.DeleteSharedRecipient]. A
// route resolves through its producer's own entry for the user, else the
// shared one, never another producer's. A user with no address for a
// channel, or opted out of it, gets that route skipped.
//
// # Roles and access
//
// A producer is the database login named after it (session_user), granted
// herald_producer: it submits in its own name only, reads and cancels only
// its own notifications, and keeps only its own directory entries; nothing
// it holds can lock the engine out or forge an audit row. A submit in
// another producer's name fails with an error matching [ErrForbidden], per
// intent in [Client.SubmitMany]. The roles herald_relay (SQL-door entries
// in any producer's name), herald_directory (the shared directory),
// herald_operator and herald_auditor complete the set. The policy, object
// by object, is the table in the operating guide's Roles section
// (herald help operating), which the module's tests check the database against.
package herald
