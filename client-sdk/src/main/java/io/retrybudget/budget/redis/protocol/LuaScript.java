package io.retrybudget.budget.redis.protocol;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * One of the scripts in lua/ (packaged as resources): its text and the SHA-1 Redis knows it by.
 * The .lua files are the single source; no script text lives in Java.
 */
public final class LuaScript {
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

  public static LuaScript load(String fileName) {
    String resource = "/io/retrybudget/lua/" + fileName;
    try (InputStream in = LuaScript.class.getResourceAsStream(resource)) {
      if (in == null) {
        throw new IllegalStateException("script resource missing: " + resource);
      }
      return new LuaScript(fileName, new String(in.readAllBytes(), StandardCharsets.UTF_8));
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
