package io.retrybudget.coordinator.relay;

import io.retrybudget.budget.redis.protocol.BudgetReply;
import io.retrybudget.budget.redis.protocol.BudgetScripts;
import io.retrybudget.budget.redis.protocol.LuaScript;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;

/**
 * One client connection of a relay as a Redis that knows only budget.lua: the commands Lettuce sends
 * on connect ({@code HELLO}, {@code AUTH}, {@code CLIENT SETNAME}/{@code SETINFO}, {@code PING},
 * {@code SELECT}), {@code SCRIPT LOAD}/{@code SCRIPT EXISTS} for budget.lua (by the SHA-1 the SDK
 * computes, {@link LuaScript#BUDGET}), and budget.lua's calls by {@code EVALSHA} (or {@code EVAL} with
 * its text, the SDK's answer to NOSCRIPT), answered by the relay ({@link Budgets}). Other scripts
 * are refused: their SHA with NOSCRIPT, their text with an error. Pure, not thread-safe: run on the
 * connection's event loop.
 */
public final class RelaySession {
  /** The relay's budgets, as the session calls them. */
  @FunctionalInterface
  public interface Budgets {
    /** budget.lua's answer to {@code call}; throws an unchecked exception whose message the client gets. */
    BudgetReply call(RelayCall call);

    /** As {@link #call}, with the relay's tag when the call asked for one ({@link RelayCall#hold()}). */
    default Answered answer(RelayCall call) {
      return new Answered(call(call), null);
    }
  }

  /** A reply, and the relay's tag ({@code RelayTag}'s wire form) written after it, or null. */
  public record Answered(BudgetReply reply, String tag) {}

  static final String BUDGET_SHA = LuaScript.BUDGET.sha1();
  private static final byte[] BUDGET_LUA_HEADER = "-- budget.lua:".getBytes(StandardCharsets.UTF_8);

  private final String budgetSha; // the budget.lua this relay runs: the SDK's it was built with
  private final byte[] budgetBody;
  private final byte[] password;
  private final long id;
  private final Budgets budgets;
  private final RespWriter out;
  private final java.util.function.Consumer<String> foreign;
  private boolean authenticated;
  private String name;

  /** {@code password} null: none asked for. {@code out} gets the replies. */
  public RelaySession(String password, long id, Budgets budgets, RespWriter out) {
    this(password, id, budgets, out, sha -> {});
  }

  /**
   * As {@link #RelaySession(String, long, Budgets, RespWriter)}; {@code foreign} is told the SHA-1 of
   * each script refused for not being this relay's budget.lua (a client of another SDK version).
   */
  public RelaySession(String password, long id, Budgets budgets, RespWriter out,
      java.util.function.Consumer<String> foreign) {
    this(password, id, budgets, out, foreign, LuaScript.BUDGET.body());
  }

  /** As above, the relay running the budget.lua {@code budgetBody}: a relay of another version, for tests. */
  RelaySession(String password, long id, Budgets budgets, RespWriter out, java.util.function.Consumer<String> foreign,
      String budgetBody) {
    this.budgetBody = budgetBody.getBytes(StandardCharsets.UTF_8);
    this.budgetSha = sha1(this.budgetBody);
    this.foreign = foreign;
    this.password = password == null ? null : password.getBytes(StandardCharsets.UTF_8);
    this.authenticated = password == null;
    this.id = id;
    this.budgets = budgets;
    this.out = out;
  }

  /** Answers {@code command} into the writer; false when the connection is to be closed after the reply. */
  public boolean handle(List<byte[]> command) {
    String verb = upper(command, 0);
    if (!authenticated && !verb.equals("AUTH") && !verb.equals("HELLO") && !verb.equals("QUIT")) {
      out.error("NOAUTH Authentication required.");
      return true;
    }
    switch (verb) {
      case "PING" -> {
        if (command.size() > 2) {
          return arity(verb);
        }
        if (command.size() == 2) {
          out.bulk(command.get(1));
        } else {
          out.simple("PONG");
        }
      }
      case "ECHO" -> {
        if (command.size() != 2) {
          return arity(verb);
        }
        out.bulk(command.get(1));
      }
      case "QUIT" -> {
        out.simple("OK");
        return false;
      }
      case "AUTH" -> auth(command);
      case "HELLO" -> hello(command);
      case "CLIENT" -> client(command);
      case "SELECT" -> {
        if (command.size() != 2) {
          return arity(verb);
        }
        // budget keys carry their names: any database holds them alike
        if (!text(command, 1).matches("[0-9]{1,2}")) {
          out.error("ERR DB index is out of range");
        } else {
          out.simple("OK");
        }
      }
      case "SCRIPT" -> script(command);
      case "EVALSHA" -> {
        if (command.size() < 3) {
          return arity(verb);
        }
        if (!budgetSha.equalsIgnoreCase(text(command, 1))) {
          out.error("NOSCRIPT No matching script. Please use EVAL.");
        } else {
          budget(command);
        }
      }
      case "EVAL" -> {
        if (command.size() < 3) {
          return arity(verb);
        }
        if (!MessageDigest.isEqual(budgetBody, command.get(1))) {
          refuse(command.get(1), true);
        } else {
          budget(command);
        }
      }
      default -> out.error("ERR unknown command " + RelayCall.printable(text(command, 0)));
    }
    return true;
  }

  private void budget(List<byte[]> command) {
    RelayCall call;
    try {
      call = RelayCall.decode(command, 2).onSession(id);
    } catch (IllegalArgumentException e) {
      out.error("ERR bad budget.lua call: " + e.getMessage());
      return;
    }
    Answered answered;
    try {
      answered = budgets.answer(call);
    } catch (RuntimeException e) {
      out.error("ERR relay: " + e.getMessage());
      return;
    }
    RelayCall.write(answered.reply(), answered.tag(), out);
  }

  private void script(List<byte[]> command) {
    String sub = upper(command, 1);
    if (sub.equals("LOAD") && command.size() == 3) {
      if (MessageDigest.isEqual(budgetBody, command.get(2))) {
        out.bulk(budgetSha);
      } else {
        refuse(command.get(2), false); // the SDK loads all its scripts on connect: not a call refused
      }
    } else if (sub.equals("EXISTS") && command.size() >= 3) {
      out.array(command.size() - 2);
      for (int i = 2; i < command.size(); i++) {
        out.integer(budgetSha.equalsIgnoreCase(text(command, i)) ? 1 : 0);
      }
    } else {
      out.error("ERR unknown or malformed SCRIPT subcommand " + RelayCall.printable(text(command, command.size() > 1 ? 1 : 0)));
    }
  }

  /**
   * Refuses a script that is not this relay's budget.lua, naming both SHAs; a budget.lua of another SDK
   * version (every version's begins {@code -- budget.lua:}) is told so, and when it came as a call
   * ({@code call}) the host hears of it. The SDK takes the prefix for a call run nowhere: its counts go
   * with its next call, on its next way, and a relay of another version is passed over for a while.
   */
  private void refuse(byte[] body, boolean call) {
    String sha = sha1(body);
    boolean budgetLua = startsWith(body, BUDGET_LUA_HEADER);
    if (budgetLua && call) {
      foreign.accept(sha);
    }
    out.error(BudgetScripts.RELAY_REFUSED_SCRIPT + " (sha " + budgetSha + "), not script sha " + sha
        + (budgetLua ? ": a budget.lua of another version; a relay and its clients must run the same SDK version" : ""));
  }

  private static boolean startsWith(byte[] body, byte[] prefix) {
    return body.length >= prefix.length && MessageDigest.isEqual(prefix, java.util.Arrays.copyOf(body, prefix.length));
  }

  private void auth(List<byte[]> command) {
    if (command.size() != 2 && command.size() != 3) {
      arity("AUTH");
      return;
    }
    if (password == null) {
      out.error("ERR AUTH <password> called without any password configured for the default user. "
          + "Are you sure your configuration is correct?");
      return;
    }
    if (check(command.size() == 3 ? command.get(1) : null, command.get(command.size() - 1))) {
      out.simple("OK");
    } else {
      out.error("WRONGPASS invalid username-password pair or user is disabled.");
    }
  }

  /** {@code HELLO [protover [AUTH user pass] [SETNAME name]]}. */
  private void hello(List<byte[]> command) {
    int protocol = out.protocol();
    int i = 1;
    if (command.size() > 1) {
      String v = text(command, 1);
      if (!v.equals("2") && !v.equals("3")) {
        out.error("NOPROTO unsupported protocol version");
        return;
      }
      protocol = v.charAt(0) - '0';
      i = 2;
    }
    String newName = name;
    while (i < command.size()) {
      String option = upper(command, i);
      if (option.equals("AUTH") && i + 2 < command.size()) {
        if (password == null ? false : !check(command.get(i + 1), command.get(i + 2))) {
          out.error("WRONGPASS invalid username-password pair or user is disabled.");
          return;
        }
        if (password != null) {
          authenticated = true;
        }
        i += 3;
      } else if (option.equals("SETNAME") && i + 1 < command.size()) {
        newName = text(command, i + 1);
        i += 2;
      } else {
        out.error("ERR Syntax error in HELLO option " + RelayCall.printable(text(command, i)));
        return;
      }
    }
    if (!authenticated) {
      out.error("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO "
          + "<proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP "
          + "protocol version at the same time");
      return;
    }
    name = newName;
    out.protocol(protocol);
    out.map(7).bulk("server").bulk("retry-budget-relay").bulk("version").bulk("7.0.0").bulk("proto").integer(protocol)
        .bulk("id").integer(id).bulk("mode").bulk("standalone").bulk("role").bulk("master").bulk("modules").array(0);
  }

  private void client(List<byte[]> command) {
    String sub = upper(command, 1);
    switch (sub) {
      case "SETNAME" -> {
        if (command.size() != 3) {
          out.error("ERR wrong number of arguments for 'client|setname' command");
          return;
        }
        name = text(command, 2);
        out.simple("OK");
      }
      case "GETNAME" -> {
        if (name == null) {
          out.nil();
        } else {
          out.bulk(name);
        }
      }
      case "SETINFO" -> out.simple("OK");
      case "ID" -> out.integer(id);
      default -> out.error("ERR unknown subcommand " + RelayCall.printable(sub) + " of CLIENT");
    }
  }

  private boolean check(byte[] user, byte[] pass) {
    boolean defaultUser = user == null || "default".equals(new String(user, StandardCharsets.UTF_8));
    return MessageDigest.isEqual(password, pass) & defaultUser;
  }

  private boolean arity(String verb) {
    out.error("ERR wrong number of arguments for '" + verb.toLowerCase(Locale.ROOT) + "' command");
    return true;
  }

  private static String upper(List<byte[]> command, int i) {
    return i < command.size() ? text(command, i).toUpperCase(Locale.ROOT) : "";
  }

  private static String text(List<byte[]> command, int i) {
    return new String(command.get(i), StandardCharsets.UTF_8);
  }

  static String sha1(byte[] body) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-1").digest(body));
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-1 not available", e);
    }
  }
}
