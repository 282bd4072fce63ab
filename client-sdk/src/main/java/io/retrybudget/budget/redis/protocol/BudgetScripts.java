package io.retrybudget.budget.redis.protocol;

import io.retrybudget.budget.redis.transport.RedisBudgetStore;

import static io.retrybudget.budget.redis.protocol.BudgetReply.asLong;

import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisException;
import io.retrybudget.budget.BudgetConfig;
import java.util.ArrayList;
import java.util.List;
import java.util.SortedSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The one typed protocol of the scripts in lua/ (documented in lua/README.md): the only place where
 * their keys and positional arguments are built and their replies parsed, used by the SDK's budgets
 * and the coordinator alike.
 *
 * <ul>
 *   <li>A script error naming bad state in Redis ({@code ERR broken key=... field=...}) fails the
 *       future with {@link BrokenBudgetException}: Redis is up, that budget's keys are not usable.
 *   <li>A budget call that Redis did not apply because the script cache was empty ({@code NOSCRIPT},
 *       after a restart, failover or {@code SCRIPT FLUSH}) or that it judged stale is sent again once,
 *       with the script's text and a fresh sequence number, so it is never refused against its own.
 *   <li>A budget call that Lettuce refused unsent because the node's connection was down (being
 *       re-established), or that Redis refused unrun while slots moved ({@code CLUSTERDOWN},
 *       {@code TRYAGAIN}), is sent again with a fresh sequence number, up to 3 times (after 50, 100
 *       and 200 ms) while the caller still waits for it.
 *   <li>A call whose fate is unknown (a timeout, a connection lost with it in flight) can be sent again
 *       with the number it last went with ({@link #numbered}, {@link #again}): applied exactly once.
 * </ul>
 */
public final class BudgetScripts {
  private static final Pattern BROKEN = Pattern.compile("ERR broken key=(\\S+) field=(\\S+) ?(.*)");

  private final RedisBudgetStore store;
  private final BudgetCalls calls;

  public BudgetScripts(RedisBudgetStore store) {
    this.store = store;
    this.calls = new BudgetCalls(store);
  }

  public RedisBudgetStore store() {
    return store;
  }

  /** The keys of a budget on this store (standalone or Cluster). */
  public BudgetKeys keys(String name) {
    return new BudgetKeys(name, store.options().isCluster());
  }

  /**
   * One budget.lua call of a client that numbers its calls (de-duplicated by the script): numbered and
   * sent under {@code sequence}'s lock.
   */
  public CompletableFuture<BudgetReply> budget(BudgetCall call, ClientSequence sequence) {
    return budget(call, keys(call.name()), sequence);
  }

  /** As {@link #budget(BudgetCall, ClientSequence)}, with the budget's keys made once by the caller ({@link #keys}). */
  public CompletableFuture<BudgetReply> budget(BudgetCall call, BudgetKeys keys, ClientSequence sequence) {
    checkKeys(call, keys);
    CompletableFuture<BudgetReply> result = new CompletableFuture<>();
    calls.send(call, List.of(), CallExtras.NONE, keys, sequence, null, 0, false, 0, result);
    return result;
  }

  /**
   * As {@link #budget(BudgetCall, BudgetKeys, ClientSequence)}, for a caller that sends its calls of
   * one budget one at a time and will send a call of unknown fate again ({@link #again}): the handle
   * tells the number of its last attempt, and no attempt goes once its reply is done.
   */
  public NumberedCall numbered(BudgetCall call, BudgetKeys keys, ClientSequence sequence) {
    return numbered(call, keys, sequence, List.of());
  }

  /** The most calls' counts in doubt one call carries (budget.lua's limit). */
  public static final int MAX_CARRIED = 8;

  /**
   * As {@link #numbered(BudgetCall, BudgetKeys, ClientSequence)}, carrying {@code carried} (at most
   * {@link #MAX_CARRIED}, in increasing number order, each numbered below any this call may take): the
   * counts of this client's calls of unknown fate on this store, each added by budget.lua only if that
   * call never ran ({@link CountsInDoubt}).
   */
  public NumberedCall numbered(BudgetCall call, BudgetKeys keys, ClientSequence sequence, List<CountsInDoubt> carried) {
    return numbered(call, keys, sequence, carried, CallExtras.NONE);
  }

  /**
   * As {@link #numbered(BudgetCall, BudgetKeys, ClientSequence, List)}, saying {@code extras}: a client's
   * ask for a relay's tag and the held items it carries, or a relay's own call's batch and the items it
   * forwards ({@link CallExtras}, {@link HeldCounts}); the tag of an applied reply is {@link NumberedCall#tag()}.
   */
  public NumberedCall numbered(BudgetCall call, BudgetKeys keys, ClientSequence sequence, List<CountsInDoubt> carried,
      CallExtras extras) {
    checkKeys(call, keys);
    List<CountsInDoubt> groups = carried == null ? List.of() : List.copyOf(carried);
    if (groups.size() > MAX_CARRIED) {
      throw new IllegalArgumentException("at most " + MAX_CARRIED + " calls' counts go with one call, was " + groups.size());
    }
    long below = 0;
    for (CountsInDoubt d : groups) {
      if (d.seq() <= below || d.seq() > sequence.last()) {
        throw new IllegalArgumentException("carried numbers must increase and have been handed out by "
            + sequence.clientId() + ", was " + groups);
      }
      below = d.seq();
    }
    NumberedCall handle = new NumberedCall(sequence);
    calls.send(call, groups, extras, keys, sequence, handle, 0, false, 0, handle.reply());
    return handle;
  }

  /**
   * Sends {@code call} again with the number {@code number} it last went with ({@link NumberedCall#number()}),
   * its fate unknown: budget.lua applies it if the first went unapplied and answers {@link BudgetReply#STALE}
   * if it was applied, so its counts are applied once. Marked {@code again} (ARGV[13]): applied only while
   * Redis holds the client's last number, so a copy delayed past its clean-up is not applied twice (a
   * client Redis never heard from gets {@code stale}: its counts are lost, the safe side). Correct only while no later number was sent for
   * this budget ({@code sequence}'s calls of it one at a time) and within two fleet epochs (4 minutes, the
   * least Redis keeps a client's last number). An empty script cache or a refusal unsent is sent again
   * with the same number; a stale reply is the answer, never re-sent.
   */
  public NumberedCall again(BudgetCall call, BudgetKeys keys, ClientSequence sequence, long number) {
    return again(call, keys, sequence, number, CallExtras.NONE);
  }

  /** As {@link #again(BudgetCall, BudgetKeys, ClientSequence, long)}, saying what it said the first time ({@code extras}). */
  public NumberedCall again(BudgetCall call, BudgetKeys keys, ClientSequence sequence, long number, CallExtras extras) {
    checkKeys(call, keys);
    if (number <= 0 || number > sequence.last()) {
      throw new IllegalArgumentException("number " + number + " was never handed out by " + sequence.clientId());
    }
    NumberedCall handle = new NumberedCall(sequence);
    calls.send(call, List.of(), extras, keys, sequence, handle, number, false, 0, handle.reply());
    return handle;
  }

  private static void checkKeys(BudgetCall call, BudgetKeys keys) {
    if (!keys.name().equals(call.name())) {
      throw new IllegalArgumentException("keys of " + keys.name() + " for a call of " + call.name());
    }
  }

  /** One budget.lua call without de-duplication (HTTP callers: many and unordered). */
  public CompletableFuture<BudgetReply> budget(BudgetCall call) {
    CompletableFuture<BudgetReply> result = new CompletableFuture<>();
    calls.send(call, List.of(), CallExtras.NONE, keys(call.name()), null, null, 0, false, 0, result);
    return result;
  }

  /**
   * How a relay of another SDK version refuses this one's budget.lua (by its text, after NOSCRIPT for
   * its SHA): the call ran nowhere ({@link #refusedAsOtherVersion}).
   */
  public static final String RELAY_REFUSED_SCRIPT = "ERR this relay runs budget.lua only";

  /**
   * Whether a budget call failed with {@code error} because its way is a relay of another SDK version
   * ({@link #RELAY_REFUSED_SCRIPT}): it ran nowhere. A client with other ways sends its counts on with
   * the next call (the route passes that relay over); one whose only way it is drops them, as for any
   * error reply, since they could wait as long as the versions differ and then land all at once.
   */
  public static boolean refusedAsOtherVersion(Throwable error) {
    Throwable cause = unwrap(error);
    return cause instanceof RedisException && cause.getMessage() != null
        && cause.getMessage().startsWith(RELAY_REFUSED_SCRIPT);
  }

  /**
   * Whether a budget call that failed with {@code error} was run by no one, so that its counts may go
   * with a later call without being counted twice: refused before it was written, by Lettuce (its
   * request queue, command buffer or stack full, its connection down or closed by this client) or by
   * Redis before running the script ({@code CLUSTERDOWN}, {@code TRYAGAIN}). An allow-list: a timeout
   * or a connection lost with the call in flight ({@code "Connection closed"}) may have been run, and
   * its counts stay lost (the safe side). After {@link #budget}'s own re-sends every attempt of a call
   * that ends so was refused the same way.
   */
  public static boolean neverRun(Throwable error) {
    Throwable cause = unwrap(error);
    if (!(cause instanceof RedisException) || cause.getMessage() == null) {
      return false;
    }
    String m = cause.getMessage();
    return BudgetCalls.notSent(cause) || m.startsWith("Request queue size exceeded") || m.startsWith("Command buffer size exceeded")
        || m.startsWith("Internal stack size exceeded") || m.startsWith("Connection is closed");
  }

  /** status.lua: read only; {@code defaults} stand where no configuration is stored. */
  public CompletableFuture<StatusReply> status(String name, BudgetConfig defaults) {
    return status(name, defaults, false);
  }

  /**
   * status.lua, read only; with {@code buckets} the reply also carries the window bucket by bucket
   * ({@link StatusReply#buckets()}), else that is null.
   */
  public CompletableFuture<StatusReply> status(String name, BudgetConfig defaults, boolean buckets) {
    BudgetKeys k = keys(name);
    String[] d = settingsArgs(defaults);
    String[] args = buckets ? new String[] {d[0], d[1], d[2], d[3], d[4], "buckets"} : d;
    return store.run(LuaScript.STATUS, new String[] {k.config(), k.window(), k.pace(), k.clients()}, args)
        .handle((r, error) -> {
          if (error != null) {
            throw new CompletionException(translate(name, unwrap(error)));
          }
          // 16 elements, then (when asked for) the buckets as the last one
          if (r == null || r.size() < 16 || (buckets && (r.size() != 17 || !(r.get(16) instanceof List)))) {
            throw new IllegalStateException("unexpected status.lua reply: " + r);
          }
          String src = String.valueOf(r.get(11));
          StatusReply.Source source = switch (src) {
            case "set" -> StatusReply.Source.SET;
            case "seed" -> StatusReply.Source.SEED;
            default -> StatusReply.Source.NONE;
          };
          return new StatusReply(name, (int) asLong(r.get(0)), asLong(r.get(1)), asLong(r.get(2)), asLong(r.get(3)),
              asLong(r.get(4)), asLong(r.get(5)),
              new BudgetSettings(asLong(r.get(6)), (int) asLong(r.get(7)), (int) asLong(r.get(8)), String.valueOf(r.get(9)),
                  (int) asLong(r.get(15))),
              Double.parseDouble(String.valueOf(r.get(10))), source, asLong(r.get(12)), asLong(r.get(13)), asLong(r.get(14)),
              buckets ? windowBuckets((List<?>) r.get(16)) : null);
        });
  }

  private static StatusReply.WindowBuckets windowBuckets(List<?> flat) {
    if (flat.size() < 2 || (flat.size() - 2) % 4 != 0) {
      throw new IllegalStateException("unexpected status.lua buckets: " + flat);
    }
    List<StatusReply.Bucket> out = new ArrayList<>((flat.size() - 2) / 4);
    for (int i = 2; i < flat.size(); i += 4) {
      out.add(new StatusReply.Bucket(asLong(flat.get(i)), asLong(flat.get(i + 1)), asLong(flat.get(i + 2)),
          asLong(flat.get(i + 3))));
    }
    return new StatusReply.WindowBuckets(asLong(flat.get(0)), asLong(flat.get(1)), List.copyOf(out));
  }

  /** configure.lua: sets the fields given (marking the configuration as set), the rest kept or defaulted. */
  public CompletableFuture<BudgetSettings> configure(String name, ConfigChange change, BudgetConfig defaults) {
    BudgetKeys k = keys(name);
    String[] d = settingsArgs(defaults);
    String[] args = {
        change.ratioPpm() == null ? "" : Long.toString(change.ratioPpm()),
        change.windowSeconds() == null ? "" : Integer.toString(change.windowSeconds()),
        change.minRetriesPerSecond() == null ? "" : Integer.toString(change.minRetriesPerSecond()),
        change.mode() == null ? "" : change.mode(),
        d[0], d[1], d[2], d[3],
        change.maxCallsPerSecond() == null ? "" : Integer.toString(change.maxCallsPerSecond()), d[4]};
    return store.run(LuaScript.CONFIGURE, new String[] {k.config(), k.index()}, args).handle((r, error) -> {
      if (error != null) {
        throw new CompletionException(translate(name, unwrap(error)));
      }
      if (r == null || r.size() != 5) {
        throw new IllegalStateException("unexpected configure.lua reply: " + r);
      }
      return new BudgetSettings(asLong(r.get(0)), (int) asLong(r.get(1)), (int) asLong(r.get(2)), String.valueOf(r.get(3)),
          (int) asLong(r.get(4)));
    });
  }

  /** delete.lua: removes every key of the budget and its index entry; true when there was one. */
  public CompletableFuture<Boolean> delete(String name) {
    BudgetKeys k = keys(name);
    return store.runInteger(LuaScript.DELETE, new String[] {k.config(), k.window(), k.clients(), k.index(), k.pace()})
        .thenApply(n -> n != null && n > 0);
  }

  /**
   * Lists a budget whose configuration key exists but is not in the index (written before the index
   * existed): true when it was added, false when it was listed already or has no configuration.
   */
  public CompletableFuture<Boolean> index(String name) {
    BudgetKeys k = keys(name);
    return store.runInteger(LuaScript.INDEX, new String[] {k.config(), k.index()})
        .handle((n, error) -> {
          if (error != null) {
            throw new CompletionException(translate(name, unwrap(error)));
          }
          return n != null && n > 0;
        });
  }

  /** The SCAN pattern of every budget's configuration key. */
  public static final String CONFIG_KEY_PATTERN = BudgetKeys.PREFIX + "{*}:cfg";

  /**
   * One step of a scan for budget configuration keys: at most about {@code count} keys looked at
   * (SCAN's COUNT; on a Cluster the masters one after the other), the budget names found and the
   * cursor to go on from ({@code null} to start; {@link ScanStep#finished()} at the end).
   */
  public CompletableFuture<ScanStep> scanConfigurations(io.lettuce.core.ScanCursor cursor, long count) {
    return store.scan(cursor, CONFIG_KEY_PATTERN, count).thenApply(BudgetScripts::scanStep);
  }

  /**
   * As {@link #scanConfigurations(io.lettuce.core.ScanCursor, long)} on one Cluster master only
   * ({@link RedisBudgetStore#clusterMasters()}), with that master's own cursor: a caller that walks
   * the masters itself can go on past one that does not answer.
   */
  public CompletableFuture<ScanStep> scanConfigurations(String nodeId, io.lettuce.core.ScanCursor cursor, long count) {
    return store.scanNode(nodeId, cursor, CONFIG_KEY_PATTERN, count).thenApply(BudgetScripts::scanStep);
  }

  private static ScanStep scanStep(io.lettuce.core.KeyScanCursor<String> c) {
    List<String> names = new ArrayList<>();
    for (String key : c.getKeys()) {
      String name = BudgetKeys.budgetOf(key);
      if (name != null && key.equals(BudgetKeys.PREFIX + "{" + name + "}:cfg")) {
        names.add(name);
      }
    }
    return new ScanStep(names, c, c.isFinished());
  }

  /** What one scan step found, and where the next one starts. */
  public record ScanStep(List<String> names, io.lettuce.core.ScanCursor cursor, boolean finished) {}

  /**
   * The names of the budgets in the index (every slot's index on a Cluster), sorted. Costs one read
   * on a standalone Redis; on a Cluster of Redis 7.0 or later one script call per master (which reads
   * the index keys of its slots inside Redis), on Redis 6.2 one read per slot (16384); never a scan of
   * what else Redis holds. Names
   * whose configuration expired may still be listed until a script prunes them: callers check status.
   * The reads stop when {@code giveUp} completes (the caller's deadline).
   */
  public CompletableFuture<SortedSet<String>> listNames(CompletableFuture<?> giveUp) {
    // scores are Redis times of expiry; a minute of client clock skew is nothing against 7 days
    long minScore = System.currentTimeMillis() - 60_000;
    CompletableFuture<SortedSet<String>> names = store.options().isCluster()
        ? store.clusterIndexMembers(minScore, giveUp)
        : store.sortedSetMembers(List.of(BudgetKeys.STANDALONE_INDEX), minScore, giveUp);
    return names.handle((found, error) -> {
      if (error != null) {
        throw new CompletionException(translateIndex(unwrap(error)));
      }
      return found;
    });
  }

  private static Throwable translateIndex(Throwable error) {
    if (error instanceof RedisCommandExecutionException && String.valueOf(error.getMessage()).startsWith("WRONGTYPE")) {
      return new BrokenBudgetException("(index)", "rb:v2:index", "type", "is not a sorted set");
    }
    return translate("(index)", error);
  }

  private static String[] settingsArgs(BudgetConfig c) {
    return new String[] {Long.toString(c.ratioPpm()), Integer.toString(c.windowSeconds()),
        Integer.toString(c.minRetriesPerSecond()), c.mode().wireName(), Integer.toString(c.maxCallsPerSecond())};
  }

  /** A script's "broken state" error as a {@link BrokenBudgetException}; anything else as it is. */
  static Throwable translate(String budget, Throwable error) {
    if (error instanceof RedisCommandExecutionException && error.getMessage() != null) {
      Matcher m = BROKEN.matcher(error.getMessage());
      if (m.find()) {
        return new BrokenBudgetException(budget, m.group(1), m.group(2), m.group(3));
      }
    }
    return error;
  }

  static Throwable unwrap(Throwable error) {
    return error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
  }
}
