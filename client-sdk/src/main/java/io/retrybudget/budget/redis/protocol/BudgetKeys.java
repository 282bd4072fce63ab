package io.retrybudget.budget.redis.protocol;

import io.lettuce.core.cluster.SlotHash;
import io.retrybudget.budget.BudgetNames;

/**
 * The Redis keys of one budget: layout version 2 (the window's ring packed in one string; lua/README.md),
 * the budget's name as the Cluster hash tag, so every script touches one slot and a future layout can
 * live beside this one. The index of budget names is one key on a standalone Redis
 * ({@code rb:v2:index}) and one per slot on a Cluster ({@code rb:v2:index:{TAG}}, TAG a string of the
 * budget's slot), so a script that updates it still touches one slot.
 */
public final class BudgetKeys {
  public static final String PREFIX = "rb:v2:";
  public static final String STANDALONE_INDEX = PREFIX + "index";

  private final String name;
  private final String config;
  private final String window;
  private final String clients;
  private final String pace;
  private final String index;

  /** The keys of a budget on a standalone Redis. */
  public BudgetKeys(String name) {
    this(name, false);
  }

  /** The keys of a budget on a standalone Redis or a Cluster (which only changes the index key). */
  public BudgetKeys(String name, boolean cluster) {
    this.name = BudgetNames.requireValid(name);
    String base = PREFIX + "{" + name + "}:";
    this.config = base + "cfg";
    this.window = base + "win";
    this.clients = base + "clients";
    this.pace = base + "pace";
    this.index = cluster ? clusterIndex(SlotHash.getSlot(config)) : STANDALONE_INDEX;
  }

  /** The start of every Cluster index key: {@code rb:v2:index:{TAG}} is this, TAG and a closing brace. */
  public static final String CLUSTER_INDEX_PREFIX = STANDALONE_INDEX + ":{";

  /** The index key of one Cluster slot. */
  public static String clusterIndex(int slot) {
    return CLUSTER_INDEX_PREFIX + SlotTags.tag(slot) + "}";
  }

  /** The hash tag of one Cluster slot's index key (a short string whose slot it is). */
  public static String clusterIndexTag(int slot) {
    return SlotTags.tag(slot);
  }

  public String name() {
    return name;
  }

  public String config() {
    return config;
  }

  public String window() {
    return window;
  }

  public String clients() {
    return clients;
  }

  /** The paced balance (16 bytes: micro-permits, Redis ms of its last update). */
  public String pace() {
    return pace;
  }

  /** The sorted set of budget names (score: when the configuration expires) this budget is listed in. */
  public String index() {
    return index;
  }

  /** The budget a key belongs to, or null when the key is not one of ours. */
  public static String budgetOf(String key) {
    if (!key.startsWith(PREFIX + "{")) {
      return null;
    }
    int close = key.indexOf("}:", PREFIX.length() + 1);
    if (close < 0) {
      return null;
    }
    String name = key.substring(PREFIX.length() + 1, close);
    return BudgetNames.isValid(name) ? name : null;
  }

  /** For each of the 16384 Cluster slots, a short string whose hash slot it is (found once, lazily). */
  private static final class SlotTags {
    private static final String[] TAGS = build();

    static String tag(int slot) {
      return TAGS[slot];
    }

    private static String[] build() {
      String[] tags = new String[SlotHash.SLOT_COUNT];
      int found = 0;
      for (long i = 0; found < tags.length; i++) {
        String candidate = Long.toString(i, 36);
        int slot = SlotHash.getSlot(candidate);
        if (tags[slot] == null) {
          tags[slot] = candidate;
          found++;
        }
      }
      return tags;
    }
  }
}
