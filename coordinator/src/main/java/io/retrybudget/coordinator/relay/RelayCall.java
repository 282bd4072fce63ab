package io.retrybudget.coordinator.relay;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.BudgetMode;
import io.retrybudget.budget.redis.protocol.BudgetCall;
import io.retrybudget.budget.redis.protocol.BudgetKeys;
import io.retrybudget.budget.redis.protocol.BudgetReply;
import io.retrybudget.budget.redis.protocol.BudgetScripts;
import io.retrybudget.budget.redis.protocol.CountsInDoubt;
import io.retrybudget.budget.redis.protocol.HeldCounts;
import io.retrybudget.relay.ReportLedger;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * One budget.lua call as the SDK's {@code BudgetScripts} sends it ({@code EVALSHA sha 5 cfg win clients
 * index pace} and 12 arguments: client id, report number, requests, denied, need, want, the seed's
 * ratio ppm, window, floor, mode and ceiling, fallback retries; then, optionally, a thirteenth that is
 * empty or tells the client's floor on its connection ({@code "first=<n>"}, {@code ConnectionFloor}; a
 * client never sends {@code again} to a relay) and the counts in doubt it carries, up to
 * {@link BudgetScripts#MAX_CARRIED} groups of four: budget.lua's ARGV[14..]), then up to
 * {@link #MAX_HELD} held items of the client's own ({@code held=...}, {@link HeldCounts}: its counts of a
 * relay it left), decoded into what a relay takes, and the reply written as budget.lua writes its own:
 * strings as bulk strings, numbers as integers, with the relay's tag as a seventeenth value when the
 * client asked for it ({@code hold}). ARGV[13] is a comma-separated list of options: the floor
 * ({@code first=<n>}) and {@code hold}, each at most once.
 *
 * @param clientId the calling client's id (budget.lua's ARGV[1])
 * @param seq its report number (ARGV[2]), strictly increasing per client id
 * @param call the counts, asks and seed
 * @param carried the counts of the client's calls of unknown fate on this relay, in number order (none: empty)
 * @param arrival the connection it came on (the relay's id for it, 0 until {@link #onSession}) and what the
 *     client told of it (ARGV[13])
 * @param hold whether the client asks for the relay's tag ({@code RelayTag}: the batch its counts went into)
 * @param held the client's counts of relays it left, to forward to Redis (none: empty)
 */
public record RelayCall(String clientId, long seq, BudgetCall call, List<CountsInDoubt> carried,
    ReportLedger.Arrival arrival, boolean hold, List<HeldCounts> held) {
  /** The most held items one client's call carries. */
  public static final int MAX_HELD = io.retrybudget.budget.redis.protocol.RelayHeld.MAX;
  private static final int KEYS = 5;
  private static final int ARGS = 12;
  private static final String FIRST = "first=";
  private static final String HOLD = "hold";

  public RelayCall {
    carried = List.copyOf(carried);
    held = List.copyOf(held);
    java.util.Objects.requireNonNull(arrival, "arrival");
  }

  /** A call that carries nothing and tells nothing of its connection. */
  public RelayCall(String clientId, long seq, BudgetCall call) {
    this(clientId, seq, call, List.of(), ReportLedger.Arrival.on(0));
  }

  /** A call that asks for no tag and carries no held items. */
  public RelayCall(String clientId, long seq, BudgetCall call, List<CountsInDoubt> carried,
      ReportLedger.Arrival arrival) {
    this(clientId, seq, call, carried, arrival, false, List.of());
  }

  /** This call, come on connection {@code id}. */
  public RelayCall onSession(long id) {
    return new RelayCall(clientId, seq, call, carried, new ReportLedger.Arrival(id, arrival.first()), hold, held);
  }

  /** The relay's id for the connection it came on (0: not known). */
  public long session() {
    return arrival.session();
  }

  /**
   * Decodes {@code command[from..]}: numkeys, the keys, the arguments. Throws
   * {@link IllegalArgumentException} naming what is wrong.
   */
  public static RelayCall decode(List<byte[]> command, int from) {
    int args = command.size() - from - 1 - KEYS;
    int items = 0; // held items: the last arguments, after the groups
    while (args - items > ARGS + 1 && HeldCounts.isArg(text(command, command.size() - 1 - items))) {
      items++;
    }
    int groups = (args - items - ARGS - 1) / 4;
    if (args != ARGS && (args - items < ARGS + 1 || (args - items - ARGS - 1) % 4 != 0
        || groups > BudgetScripts.MAX_CARRIED || items > MAX_HELD)) {
      throw new IllegalArgumentException("budget.lua takes numkeys, " + KEYS + " keys and " + ARGS + " or " + (ARGS + 1)
          + " arguments, or " + (ARGS + 1) + " and up to " + BudgetScripts.MAX_CARRIED
          + " groups of 4 and up to " + MAX_HELD + " held items, after the script, got "
          + Math.max(0, command.size() - from) + " values");
    }
    if (!"5".equals(text(command, from))) {
      throw new IllegalArgumentException("budget.lua takes 5 keys, numkeys was " + printable(text(command, from)));
    }
    String name = BudgetKeys.budgetOf(text(command, from + 1));
    if (name == null) {
      throw new IllegalArgumentException("the first key is no budget's configuration key");
    }
    BudgetKeys keys = new BudgetKeys(name);
    String[] expected = {keys.config(), keys.window(), keys.clients(), keys.index(), keys.pace()};
    for (int i = 0; i < KEYS; i++) {
      if (!expected[i].equals(text(command, from + 1 + i))) {
        throw new IllegalArgumentException("key " + (i + 1) + " is not " + expected[i]);
      }
    }
    int a = from + 1 + KEYS;
    String clientId = text(command, a);
    if (clientId.isEmpty() || clientId.length() > 64 || clientId.contains(":")) {
      throw new IllegalArgumentException("a relay needs the client id (1 to 64 characters without ':')");
    }
    long seq = number(command, a + 1, "seq");
    if (seq <= 0) {
      throw new IllegalArgumentException("seq must be positive, was " + seq);
    }
    BudgetConfig seed = null;
    if (!text(command, a + 6).isEmpty()) {
      try {
        seed = BudgetConfig.builder(name)
            .ratioPpm(number(command, a + 6, "ratio_ppm"))
            .windowSeconds((int) number(command, a + 7, "window_s"))
            .minRetriesPerSecond((int) number(command, a + 8, "min_rps"))
            .mode(BudgetMode.fromWireName(text(command, a + 9)))
            .maxCallsPerSecond((int) number(command, a + 10, "max_calls"))
            .build();
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("bad seed: " + e.getMessage());
      }
    }
    String retries = text(command, a + 11);
    BudgetCall call = new BudgetCall(name, number(command, a + 2, "requests"), number(command, a + 3, "denied"),
        retries.isEmpty() ? 0 : number(command, a + 11, "retries"), number(command, a + 4, "need"),
        number(command, a + 5, "want"), seed);
    String[] options = args > ARGS ? options(text(command, a + ARGS)) : new String[2];
    ReportLedger.Arrival arrival = claim(options[0], seq);
    List<CountsInDoubt> carried = new java.util.ArrayList<>();
    if (args > ARGS + 1 && !text(command, a + 13).isEmpty()) {
      long below = 0;
      for (int g = 0; g < groups; g++) {
        int at = a + 13 + 4 * g;
        long doubtSeq = number(command, at, "doubt_seq");
        if (doubtSeq <= below || doubtSeq >= seq) {
          throw new IllegalArgumentException("doubt_seq must increase within [1, seq), was " + doubtSeq);
        }
        carried.add(new CountsInDoubt(doubtSeq, number(command, at + 1, "doubt_requests"),
            number(command, at + 2, "doubt_denied"), number(command, at + 3, "doubt_retries")));
        below = doubtSeq;
      }
    }
    List<HeldCounts> held = new java.util.ArrayList<>();
    for (int i = command.size() - items; i < command.size(); i++) {
      HeldCounts h = HeldCounts.parse(text(command, i));
      if (!h.client().equals(clientId)) {
        throw new IllegalArgumentException("invalid held: a client carries its own counts, not "
            + printable(h.client()) + "'s");
      }
      held.add(h);
    }
    return new RelayCall(clientId, seq, call, carried, arrival, options[1] != null, held);
  }

  /**
   * ARGV[13]'s options, comma-separated, each at most once: the floor {@code first=<n>} and {@code hold};
   * returns {floor or null, "hold" or null}.
   */
  private static String[] options(String s) {
    String[] found = new String[2];
    if (s.isEmpty()) {
      return found;
    }
    for (String o : s.split(",", -1)) {
      int i = o.startsWith(FIRST) ? 0 : HOLD.equals(o) ? 1 : -1;
      if (i < 0 || found[i] != null) {
        throw new IllegalArgumentException("a relay takes '', '" + FIRST + "<n>' and '" + HOLD
            + "', each at most once, in ARGV[13], not " + printable(s)
            + (o.startsWith("again") ? ": a call sent again goes to Redis, not to a relay" : ""));
      }
      found[i] = o;
    }
    return found;
  }

  /** The client's floor {@code "first=<n>"} with 1 &lt;= n &lt;= seq, or none (null). */
  private static ReportLedger.Arrival claim(String s, long seq) {
    if (s == null) {
      return ReportLedger.Arrival.on(0);
    }
    long first = digits(s.substring(FIRST.length()), "ARGV[13]'s first");
    if (first < 1 || first > seq) {
      throw new IllegalArgumentException("ARGV[13]'s first must be in [1, seq], was " + printable(s));
    }
    return new ReportLedger.Arrival(0, first);
  }

  /**
   * {@code reply} as budget.lua's 15 values and the relay's call ceiling (its clients' terms, the
   * sixteenth): status and mode as bulk strings, the rest as integers.
   */
  public static void write(BudgetReply reply, RespWriter out) {
    write(reply, null, out);
  }

  /** As {@link #write(BudgetReply, RespWriter)}, with {@code tag} (a {@code RelayTag}'s wire form) seventeenth if not null. */
  public static void write(BudgetReply reply, String tag, RespWriter out) {
    out.array(tag == null ? 16 : 17).bulk(reply.status()).integer(reply.granted()).integer(reply.requests()).integer(reply.retries())
        .integer(reply.denied()).integer(reply.allowance()).integer(reply.activeClients()).integer(reply.ratioPpm())
        .integer(reply.windowSeconds()).integer(reply.minRetriesPerSecond()).bulk(reply.mode())
        .integer(reply.available()).integer(reply.nextGrantMillis()).integer(reply.refillPpm())
        .integer(reply.maxCallsPerSecond()).integer(reply.callCeiling());
    if (tag != null) {
      out.bulk(tag);
    }
  }

  private static String text(List<byte[]> command, int i) {
    return new String(command.get(i), StandardCharsets.UTF_8);
  }

  private static long number(List<byte[]> command, int i, String field) {
    return digits(text(command, i), field);
  }

  private static long digits(String s, String field) {
    if (s.isEmpty() || s.length() > 18 || !s.chars().allMatch(c -> c >= '0' && c <= '9')) {
      throw new IllegalArgumentException(field + " must be a non-negative integer, was " + printable(s));
    }
    return Long.parseLong(s);
  }

  /** At most 32 characters of client text, for an error message. */
  static String printable(String s) {
    String cut = s.length() > 32 ? s.substring(0, 32) + "..." : s;
    return "'" + cut.replaceAll("[^\\x20-\\x7e]", "?") + "'";
  }
}
