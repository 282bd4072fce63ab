package io.retrybudget.coordinator.relay;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.redis.protocol.BudgetKeys;
import io.retrybudget.budget.redis.protocol.BudgetReply;
import io.retrybudget.budget.redis.protocol.CountsInDoubt;
import io.retrybudget.budget.redis.protocol.HeldCounts;
import io.retrybudget.budget.redis.protocol.RelayTag;
import io.retrybudget.relay.ReportLedger;
import io.retrybudget.budget.redis.protocol.LuaScript;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

class RelaySessionTest {
  private static final BudgetReply REPLY = new BudgetReply("granted", 2, 100, 5, 1, 20, 3, 100_000, 10, 10, "enforce",
      7, 0, 1_000_000, 1_500);
  private final List<RelayCall> calls = new ArrayList<>();
  private final RespWriter out = new RespWriter();

  private RelaySession session(String password) {
    return new RelaySession(password, 42, call -> {
      calls.add(call);
      return REPLY;
    }, out);
  }

  private static List<byte[]> command(String... args) {
    return Arrays.stream(args).map(a -> a.getBytes(StandardCharsets.UTF_8)).toList();
  }

  private String answer(RelaySession s, String... args) {
    assertTrue(s.handle(command(args)), "the connection stays open");
    return new String(out.take(), StandardCharsets.UTF_8);
  }

  private static String[] budgetCall(String verb, String script, String... argv) {
    BudgetKeys k = new BudgetKeys("payments-api");
    List<String> c = new ArrayList<>(List.of(verb, script, "5", k.config(), k.window(), k.clients(), k.index(), k.pace()));
    c.addAll(List.of(argv));
    return c.toArray(new String[0]);
  }

  private static final String[] ARGV = {"client-1", "7", "30", "2", "1", "4", "100000", "10", "10", "enforce", "2000", ""};

  @Test
  void helloSwitchesTheProtocolAndTellsWhoAnswers() {
    RelaySession s = session(null);
    String resp3 = answer(s, "HELLO", "3", "SETNAME", "app");
    assertTrue(resp3.startsWith("%7\r\n$6\r\nserver\r\n$18\r\nretry-budget-relay\r\n"), resp3);
    assertTrue(resp3.contains("$5\r\nproto\r\n:3\r\n$2\r\nid\r\n:42\r\n"), resp3);
    assertEquals("$3\r\napp\r\n", answer(s, "CLIENT", "GETNAME"));
    assertTrue(answer(s, "HELLO", "2").startsWith("*14\r\n"), "RESP2: the map as a flat array");
    assertEquals("-NOPROTO unsupported protocol version\r\n", answer(s, "HELLO", "4"));
  }

  @Test
  void whatLettuceSendsOnConnectIsAnsweredAsRedisAnswersIt() {
    RelaySession s = session(null);
    assertEquals("+OK\r\n", answer(s, "CLIENT", "SETINFO", "lib-name", "Lettuce"));
    assertEquals("+OK\r\n", answer(s, "CLIENT", "SETNAME", "x"));
    assertEquals(":42\r\n", answer(s, "CLIENT", "ID"));
    assertEquals("+PONG\r\n", answer(s, "PING"));
    assertEquals("$2\r\nhi\r\n", answer(s, "PING", "hi"));
    assertEquals("+OK\r\n", answer(s, "SELECT", "0"));
    assertEquals("-ERR DB index is out of range\r\n", answer(s, "SELECT", "-1"));
    assertEquals("-ERR unknown subcommand 'MAINT_NOTIFICATIONS' of CLIENT\r\n", answer(s, "client", "maint_notifications", "on"));
    assertEquals("-ERR unknown command 'FLUSHALL'\r\n", answer(s, "FLUSHALL"));
    assertEquals("-ERR wrong number of arguments for 'echo' command\r\n", answer(s, "ECHO"));
    assertFalse(s.handle(command("QUIT")), "QUIT closes after its reply");
    assertEquals("+OK\r\n", new String(out.take(), StandardCharsets.UTF_8));
  }

  @Test
  void withAPasswordNothingButAuthHelloAndQuitRunsBeforeIt() {
    RelaySession s = session("secret");
    assertEquals("-NOAUTH Authentication required.\r\n", answer(s, budgetCall("EVALSHA", RelaySession.BUDGET_SHA, ARGV)));
    assertTrue(calls.isEmpty());
    assertEquals("-WRONGPASS invalid username-password pair or user is disabled.\r\n", answer(s, "AUTH", "wrong"));
    assertEquals("-WRONGPASS invalid username-password pair or user is disabled.\r\n", answer(s, "AUTH", "other", "secret"));
    assertTrue(answer(s, "HELLO", "3").startsWith("-NOAUTH HELLO must be called"));
    assertTrue(answer(s, "HELLO", "3", "AUTH", "default", "secret").startsWith("%7\r\n"));
    assertTrue(answer(s, budgetCall("EVALSHA", RelaySession.BUDGET_SHA, ARGV)).startsWith("*16\r\n"));
  }

  @Test
  void authWithoutAPasswordIsRefusedAsRedisRefusesIt() {
    assertTrue(answer(session(null), "AUTH", "x").startsWith("-ERR AUTH <password> called without any password configured"));
  }

  @Test
  void budgetLuaBySha1OrTextGoesToTheRelayDecoded() {
    RelaySession s = session(null);
    String reply = answer(s, budgetCall("EVALSHA", LuaScript.BUDGET.sha1(), ARGV));
    assertEquals("*16\r\n$7\r\ngranted\r\n:2\r\n:100\r\n:5\r\n:1\r\n:20\r\n:3\r\n:100000\r\n:10\r\n:10\r\n$7\r\nenforce\r\n"
        + ":7\r\n:0\r\n:1000000\r\n:1500\r\n:1500\r\n", reply);
    answer(s, budgetCall("EVAL", LuaScript.BUDGET.body(), ARGV));
    assertEquals(2, calls.size());
    RelayCall c = calls.get(0);
    assertEquals("client-1", c.clientId());
    assertEquals(7, c.seq());
    assertEquals("payments-api", c.call().name());
    assertEquals(List.of(30L, 2L, 0L, 1L, 4L), List.of(c.call().requests(), c.call().denied(), c.call().retries(),
        c.call().need(), c.call().want()));
    assertEquals(100_000, c.call().seed().ratioPpm());
    assertEquals(2000, c.call().seed().maxCallsPerSecond());
  }

  @Test
  void aCallCarryingCountsInDoubtIsDecodedWithThem() {
    RelaySession s = session(null);
    String[] carrying = java.util.Arrays.copyOf(ARGV, 21);
    System.arraycopy(new String[] {"", "5", "9", "1", "0", "6", "2", "0", "1"}, 0, carrying, 12, 9);
    answer(s, budgetCall("EVALSHA", RelaySession.BUDGET_SHA, carrying));
    String[] empty = java.util.Arrays.copyOf(ARGV, 17);
    System.arraycopy(new String[] {"", "", "", "", ""}, 0, empty, 12, 5);
    answer(s, budgetCall("EVALSHA", RelaySession.BUDGET_SHA, empty));
    String[] thirteen = java.util.Arrays.copyOf(ARGV, 13);
    thirteen[12] = "";
    answer(s, budgetCall("EVALSHA", RelaySession.BUDGET_SHA, thirteen));
    assertEquals(3, calls.size());
    assertEquals(List.of(new CountsInDoubt(5, 9, 1, 0), new CountsInDoubt(6, 2, 0, 1)), calls.get(0).carried());
    assertEquals(30, calls.get(0).call().requests(), "the call's own counts as they were");
    assertEquals(42, calls.get(0).session(), "with the connection it came on");
    assertEquals(List.of(), calls.get(1).carried(), "an empty doubt_seq carries nothing");
    assertEquals(List.of(), calls.get(2).carried());
    String[] again = java.util.Arrays.copyOf(ARGV, 13);
    again[12] = "again";
    assertEquals("-ERR bad budget.lua call: a relay takes '', 'first=<n>' and 'hold', each at most once, in ARGV[13], "
        + "not 'again': a call sent again goes to Redis, not to a relay\r\n",
        answer(s, budgetCall("EVALSHA", RelaySession.BUDGET_SHA, again)));
    String[] notBelow = carrying.clone();
    notBelow[17] = "7";
    assertEquals("-ERR bad budget.lua call: doubt_seq must increase within [1, seq), was 7\r\n",
        answer(s, budgetCall("EVALSHA", RelaySession.BUDGET_SHA, notBelow)));
    String[] notIncreasing = carrying.clone();
    notIncreasing[17] = "5";
    assertEquals("-ERR bad budget.lua call: doubt_seq must increase within [1, seq), was 5\r\n",
        answer(s, budgetCall("EVALSHA", RelaySession.BUDGET_SHA, notIncreasing)));
    String[] badCount = carrying.clone();
    badCount[15] = "-1";
    assertEquals("-ERR bad budget.lua call: doubt_denied must be a non-negative integer, was '-1'\r\n",
        answer(s, budgetCall("EVALSHA", RelaySession.BUDGET_SHA, badCount)));
    String[] ragged = java.util.Arrays.copyOf(carrying, 19);
    assertTrue(answer(s, budgetCall("EVALSHA", RelaySession.BUDGET_SHA, ragged))
        .startsWith("-ERR bad budget.lua call: budget.lua takes numkeys, 5 keys and 12 or 13 arguments, or 13 and up to 8 groups of 4"));
    assertEquals(3, calls.size(), "no bad call reached the relay");
  }

  @Test
  void theClientsFloorOnItsConnectionIsDecodedAndAWrongOneRefusedByName() {
    RelaySession s = session(null);
    String[] told = java.util.Arrays.copyOf(ARGV, 17);
    System.arraycopy(new String[] {"first=3", "5", "9", "1", "0"}, 0, told, 12, 5);
    answer(s, budgetCall("EVALSHA", RelaySession.BUDGET_SHA, told));
    String[] alone = java.util.Arrays.copyOf(ARGV, 13);
    alone[12] = "first=7"; // the call's own number: it knows none lower
    answer(s, budgetCall("EVALSHA", RelaySession.BUDGET_SHA, alone));
    assertEquals(2, calls.size());
    assertEquals(new ReportLedger.Arrival(42, 3), calls.get(0).arrival(), "on connection 42, the client's floor 3");
    assertEquals(List.of(new CountsInDoubt(5, 9, 1, 0)), calls.get(0).carried());
    assertEquals(new ReportLedger.Arrival(42, 7), calls.get(1).arrival());
    for (String bad : new String[] {"first=0", "first=8", "first=", "first=-1", "first=1e3", "first=3 ", "FIRST=3", "3",
        "first=99999999999999999999"}) {
      alone[12] = bad;
      String reply = answer(s, budgetCall("EVALSHA", RelaySession.BUDGET_SHA, alone));
      assertTrue(reply.startsWith("-ERR bad budget.lua call: ") && reply.contains("ARGV[13]"), bad + ": " + reply);
    }
    assertEquals(2, calls.size(), "no bad floor reached the relay");
  }

  @Test
  void heldItemsAndTheAskForATagAreDecodedAndNonsenseRefusedByName() {
    RelaySession s = session(null);
    String item = new HeldCounts("relay-gone", 4, "client-1", 3, 1, 0).arg();
    String[] holding = java.util.Arrays.copyOf(ARGV, 19);
    System.arraycopy(new String[] {"first=3,hold", "5", "9", "1", "0", item, item.replace(",4,", ",5,")}, 0, holding,
        12, 7);
    answer(s, budgetCall("EVALSHA", RelaySession.BUDGET_SHA, holding));
    String[] itemsOnly = java.util.Arrays.copyOf(ARGV, 14);
    itemsOnly[12] = "hold";
    itemsOnly[13] = item;
    answer(s, budgetCall("EVALSHA", RelaySession.BUDGET_SHA, itemsOnly));
    assertEquals(2, calls.size());
    RelayCall first = calls.get(0);
    assertTrue(first.hold());
    assertEquals(new ReportLedger.Arrival(42, 3), first.arrival());
    assertEquals(List.of(new CountsInDoubt(5, 9, 1, 0)), first.carried());
    assertEquals(List.of(new HeldCounts("relay-gone", 4, "client-1", 3, 1, 0),
        new HeldCounts("relay-gone", 5, "client-1", 3, 1, 0)), first.held());
    assertEquals(List.of(), calls.get(1).carried());
    assertEquals(1, calls.get(1).held().size());
    String[][] bad = {
        {"hold,hold", item}, {"hold,first=3,first=3", item}, {"through=3", item}, {"hold ", item},
        {"hold", "held=relay-gone,4,someone-else,3,1,0"}, {"hold", "held=relay-gone,0,client-1,3,1,0"},
        {"hold", "held=relay gone,4,client-1,3,1,0"}, {"hold", "held=relay-gone,4,client-1,3,1"},
        {"hold", "held=relay-gone,4,client-1,3,1,-2"}};
    for (String[] b : bad) {
      String[] call = java.util.Arrays.copyOf(ARGV, 14);
      call[12] = b[0];
      call[13] = b[1];
      String reply = answer(s, budgetCall("EVALSHA", RelaySession.BUDGET_SHA, call));
      assertTrue(reply.startsWith("-ERR bad budget.lua call: ") && (reply.contains("ARGV[13]") || reply.contains("held")),
          String.join(" ", b) + ": " + reply);
    }
    String[] tooMany = java.util.Arrays.copyOf(ARGV, 13 + RelayCall.MAX_HELD + 1);
    tooMany[12] = "hold";
    java.util.Arrays.fill(tooMany, 13, tooMany.length, item);
    assertTrue(answer(s, budgetCall("EVALSHA", RelaySession.BUDGET_SHA, tooMany)).contains("up to 16 held items"));
    assertEquals(2, calls.size(), "no bad call reached the relay");
  }

  @Test
  void aTagAskedForIsTheSeventeenthValue() {
    RelaySession s = new RelaySession(null, 42, new RelaySession.Budgets() {
      @Override
      public BudgetReply call(RelayCall call) {
        return REPLY;
      }

      @Override
      public RelaySession.Answered answer(RelayCall call) {
        return new RelaySession.Answered(REPLY, call.hold() ? new RelayTag("relay-x", 9, 8, true).wire() : null);
      }
    }, out);
    String[] hold = java.util.Arrays.copyOf(ARGV, 13);
    hold[12] = "hold";
    String tagged = answer(s, budgetCall("EVALSHA", RelaySession.BUDGET_SHA, hold));
    assertTrue(tagged.startsWith("*17\r\n") && tagged.endsWith("$13\r\nrelay-x,9,8,1\r\n"), tagged);
    assertTrue(answer(s, budgetCall("EVALSHA", RelaySession.BUDGET_SHA, ARGV)).startsWith("*16\r\n"));
  }

  @Test
  void otherScriptsAreRefused() {
    RelaySession s = session(null);
    assertEquals("-NOSCRIPT No matching script. Please use EVAL.\r\n", answer(s, "EVALSHA", LuaScript.STATUS.sha1(), "0"));
    assertEquals(refusal("e0e1f9fabfc9d4800c877a703b823ac0578ff8db"), answer(s, "EVAL", "return 1", "0"));
    assertEquals("$40\r\n" + LuaScript.BUDGET.sha1() + "\r\n", answer(s, "SCRIPT", "LOAD", LuaScript.BUDGET.body()));
    assertEquals(refusal(LuaScript.STATUS.sha1()), answer(s, "SCRIPT", "LOAD", LuaScript.STATUS.body()));
    assertEquals("*2\r\n:1\r\n:0\r\n", answer(s, "SCRIPT", "EXISTS", LuaScript.BUDGET.sha1(), LuaScript.DELETE.sha1()));
    assertEquals("-ERR unknown or malformed SCRIPT subcommand 'FLUSH'\r\n", answer(s, "SCRIPT", "FLUSH"));
    assertTrue(calls.isEmpty());
  }

  private static String refusal(String sha) {
    return "-ERR this relay runs budget.lua only (sha " + LuaScript.BUDGET.sha1() + "), not script sha " + sha + "\r\n";
  }

  private static String otherVersion(String sha) {
    return "-ERR this relay runs budget.lua only (sha " + LuaScript.BUDGET.sha1() + "), not script sha " + sha
        + ": a budget.lua of another version; a relay and its clients must run the same SDK version\r\n";
  }

  /**
   * A client of another SDK version sends its own budget.lua: refused by text and by SCRIPT LOAD, naming
   * both SHAs and the version, and the host is told of each call refused (it warns the operator); never
   * answered as a budget call.
   */
  @Test
  void aBudgetLuaOfAnotherVersionIsRefusedNamingBothShas() {
    List<String> told = new ArrayList<>();
    RelaySession s = new RelaySession(null, 42, call -> {
      calls.add(call);
      return REPLY;
    }, out, told::add);
    String other = LuaScript.BUDGET.body() + "\n-- the next version\n";
    String otherSha = sha1(other);
    assertEquals("-NOSCRIPT No matching script. Please use EVAL.\r\n", answer(s, budgetCall("EVALSHA", otherSha, ARGV)));
    assertEquals(otherVersion(otherSha), answer(s, budgetCall("EVAL", other, ARGV)));
    assertEquals(List.of(otherSha), told, "the call refused");
    assertEquals(otherVersion(otherSha), answer(s, "SCRIPT", "LOAD", other));
    assertEquals(refusal(LuaScript.STATUS.sha1()), answer(s, budgetCall("EVAL", LuaScript.STATUS.body(), ARGV)));
    assertEquals(List.of(otherSha), told, "a load is no call, and status.lua is no budget.lua");
    assertTrue(calls.isEmpty());
    assertTrue(answer(s, budgetCall("EVAL", LuaScript.BUDGET.body(), ARGV)).startsWith("*16\r\n"));
    assertEquals(1, calls.size());
    assertEquals(1, told.size());
  }

  private static String sha1(String text) {
    try {
      return java.util.HexFormat.of().formatHex(java.security.MessageDigest.getInstance("SHA-1")
          .digest(text.getBytes(StandardCharsets.UTF_8)));
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new AssertionError(e);
    }
  }

  @Test
  void aBadBudgetCallIsRefusedNamingWhatIsWrong() {
    RelaySession s = session(null);
    String sha = RelaySession.BUDGET_SHA;
    assertEquals("-ERR bad budget.lua call: budget.lua takes numkeys, 5 keys and 12 or 13 arguments, or 13 and up to 8 groups of 4 and up to 16 held items, after the script, got 1 values\r\n",
        answer(s, "EVALSHA", sha, "0"));
    String[] noId = ARGV.clone();
    noId[0] = "";
    assertEquals("-ERR bad budget.lua call: a relay needs the client id (1 to 64 characters without ':')\r\n",
        answer(s, budgetCall("EVALSHA", sha, noId)));
    String[] badCount = ARGV.clone();
    badCount[2] = "-5";
    assertEquals("-ERR bad budget.lua call: requests must be a non-negative integer, was '-5'\r\n",
        answer(s, budgetCall("EVALSHA", sha, badCount)));
    String[] badMode = ARGV.clone();
    badMode[9] = "loose";
    assertEquals("-ERR bad budget.lua call: bad seed: mode must be 'enforce' or 'shadow', was 'loose'\r\n",
        answer(s, budgetCall("EVALSHA", sha, badMode)));
    String[] wantBelowNeed = ARGV.clone();
    wantBelowNeed[5] = "0";
    assertTrue(answer(s, budgetCall("EVALSHA", sha, wantBelowNeed)).startsWith("-ERR bad budget.lua call: bad budget call:"));
    List<String> wrongKey = new ArrayList<>(List.of(budgetCall("EVALSHA", sha, ARGV)));
    wrongKey.set(4, "rb:v2:{other}:win");
    assertEquals("-ERR bad budget.lua call: key 2 is not rb:v2:{payments-api}:win\r\n",
        answer(s, wrongKey.toArray(new String[0])));
    assertTrue(calls.isEmpty(), "nothing reached the relay");
  }

  @Test
  void aRelayThatRefusesAnswersAnErrorAndTheConnectionStays() {
    RelaySession s = new RelaySession(null, 1, call -> {
      throw new IllegalStateException("this relay serves at most 1 budgets");
    }, out);
    assertEquals("-ERR relay: this relay serves at most 1 budgets\r\n",
        answer(s, budgetCall("EVALSHA", RelaySession.BUDGET_SHA, ARGV)));
    assertEquals("+PONG\r\n", answer(s, "PING"));
  }
}
