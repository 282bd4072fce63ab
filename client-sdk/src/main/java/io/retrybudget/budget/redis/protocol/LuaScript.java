package io.retrybudget.budget.redis.protocol;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One of the scripts in lua/ (packaged as resources): its text and the SHA-1 Redis knows it by.
 * The .lua files are the single source; no script text lives in Java.
 *
 * <p>A script's line {@code --#include NAME} stands for the text of {@code lua/fragments/NAME} (the
 * rules budget.lua and status.lua share): {@link #load} puts it in that line's place, so the text
 * Redis runs, and its SHA-1, is self-contained. {@code lua/assemble.sh} does the same outside Java,
 * byte for byte. A fragment includes nothing itself.
 */
public final class LuaScript {
  // before the scripts: their loading uses these
  private static final String SDK_SCRIPTS = "/io/retrybudget/lua/";
  private static final Pattern INCLUDE = Pattern.compile("(?m)^--#include ([A-Za-z0-9._-]+\\.lua)$");
  public static final LuaScript BUDGET = load("budget.lua");
  public static final LuaScript STATUS = load("status.lua");
  public static final LuaScript CONFIGURE = load("configure.lua");
  public static final LuaScript DELETE = load("delete.lua");
  /** Lists a budget whose configuration predates the index (the coordinator's backfill). */
  public static final LuaScript INDEX = load("index.lua");
  /**
   * Reads the index keys of many Cluster slots on the node that serves them (Redis 7.0 or later:
   * {@code allow-cross-slot-keys}); not in {@link #BUDGET_SCRIPTS}, as Redis 6.2 cannot load it.
   */
  public static final LuaScript LIST = load("list.lua");
  /** Every budget script, loaded into each master's cache when a connection opens. */
  public static final java.util.List<LuaScript> BUDGET_SCRIPTS = java.util.List.of(BUDGET, STATUS, CONFIGURE, DELETE, INDEX);

  private final String name;
  private final String body;
  private final String sha1;

  private LuaScript(String name, String body) {
    this.name = name;
    this.body = body;
    this.sha1 = sha1Hex(body);
  }

  /** A script of lua/ by file name, its {@code --#include} lines replaced by their fragments. */
  public static LuaScript load(String fileName) {
    return load(LuaScript.class, SDK_SCRIPTS, fileName);
  }

  /**
   * A script another module packages: {@code fileName} in the resource directory {@code directory}
   * (absolute, ending in {@code /}) of {@code owner}'s module, its includes from the {@code fragments/}
   * directory beside it. (server-kit packages its scripts apart from the SDK's, so no package is
   * split between the two jars.)
   */
  public static LuaScript load(Class<?> owner, String directory, String fileName) {
    if (!directory.startsWith("/") || !directory.endsWith("/")) {
      throw new IllegalArgumentException("directory must be absolute and end in '/', was " + directory);
    }
    return new LuaScript(fileName, assemble(read(owner, directory + fileName),
        name -> read(owner, directory + "fragments/" + name)));
  }

  /** The text of {@code lua/fragments/NAME} as packaged. */
  public static String fragment(String name) {
    return read(LuaScript.class, SDK_SCRIPTS + "fragments/" + name);
  }

  /**
   * {@code script} with every line {@code --#include NAME} replaced by {@code fragments.apply(NAME)}
   * (one trailing line break of it dropped: the line's own stays). A fragment that includes another
   * is refused.
   */
  static String assemble(String script, Function<String, String> fragments) {
    Matcher m = INCLUDE.matcher(script);
    StringBuilder out = new StringBuilder(script.length() + 8192);
    while (m.find()) {
      String text = fragments.apply(m.group(1));
      if (INCLUDE.matcher(text).find()) {
        throw new IllegalStateException("fragment " + m.group(1) + " includes another; fragments include nothing");
      }
      m.appendReplacement(out, Matcher.quoteReplacement(text.endsWith("\n") ? text.substring(0, text.length() - 1) : text));
    }
    m.appendTail(out);
    return out.toString();
  }

  private static String read(Class<?> owner, String resource) {
    try (InputStream in = owner.getResourceAsStream(resource)) {
      if (in == null) {
        throw new IllegalStateException("script resource missing: " + resource);
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read script " + resource, e);
    }
  }

  public String name() {
    return name;
  }

  public String body() {
    return body;
  }

  public String sha1() {
    return sha1;
  }

  private static String sha1Hex(String text) {
    try {
      MessageDigest digest = MessageDigest.getInstance("SHA-1");
      return HexFormat.of().formatHex(digest.digest(text.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-1 not available", e);
    }
  }

  @Override
  public String toString() {
    return name + "@" + sha1;
  }
}
