// # Custom scripts
//
// A Custom runs a user's Lua script unchanged (NewCustom checks its CustomSpec; Prepare loads the
// script on every master and binds it to one Limit and key prefix). With CustomSpec.Function set,
// the script is a Redis function library instead: Prepare loads it with FUNCTION LOAD on every
// master where no library of its name is (one with the same code is used as it is, one with
// other code is ErrLibraryInUse: a user's library is never replaced), requests call the function
// with FCALL (a call that finds it gone loads the library again on every master), and Unload
// removes the library where Prepare loaded it. Four things describe it:
//
//   - Keys and Args are templates (template.go): literal text with placeholders for the request
//     (subject, tag, client, cost, uuid), the limit (limit, window_ms, window_s, burst, rate,
//     prefix) and the client's clock (now_ms, now_s, now_us, now_s_float, the last one seconds
//     with six decimals). A placeholder may hold an integer expression with + - * / (floor
//     division) and parentheses, such as {{now_ms / window_ms - 1}} for the previous window's
//     number. Templates are parsed once, their constants folded when a limiter is bound, and
//     expanded per request without allocating beyond the output; an expression over constants
//     that divides by zero or overflows is an error before anything is sent, one over a
//     request's values fails that request with ErrTemplate, unsent. Keys that do not start with
//     the prefix get it prepended; a key template "" stays the empty string (a library's "no
//     key"), and HasEmptyKey says so, since such a key is refused on a cluster and may hold state
//     from before a run.
//   - Allowed is a ReplyRule: equals, not_equals, prefix, is_nil, and the numeric greater_than,
//     at_least, at_most, less_than (integers compared exactly). Its value may be a template,
//     expanded per request before sending: at_most "{{limit}}" reads a script that returns its
//     count.
//   - Time, optional, is a ReplyTime: the element of the reply that holds the Unix time the
//     script decided at, an integer or a decimal or exponent string as Lua's tostring writes it
//     (ParseTime). The decision gets the interval the written digits allow (Decision.TimeMicros
//     and TimeSpanMicros), so a time printed with fewer digits than it had widens the decision
//     and never moves it.
//   - Contract is what the script promises: sliding-window, fixed-window (aligned on the epoch),
//     first-hit-window (each window begins at the first request after the previous one ended),
//     token-bucket, or none. Its numbers may be templates of what is constant for a limit
//     (ContractTemplates, filled for each Limit by Custom.Contract with FillContract), and LimitNote says
//     how they differ from the scenario's limit. A Granularity is part of the contract's text
//     (Contract.String), so a pass that holds only within it says so.
//
// A reply the rules cannot read is an error wrapping ErrBadReply, never an admission; its text
// names the rule (allowed or time), the element and the raw reply, and the limiter keeps the
// first one for the report (ReplyReporter). A script that uses no clock template decides on
// Redis's clock (ClockServer); one that does is ClockClient and is affected by clock skew.
package algorithms
