package io.retrybudget.coordinator.relay;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class RespParserTest {
  private final List<List<String>> commands = new ArrayList<>();
  private final RespParser parser = new RespParser(8, 64, 100);

  private void feed(String text) {
    byte[] b = text.getBytes(StandardCharsets.ISO_8859_1);
    parser.feed(b, 0, b.length, c -> commands.add(c.stream().map(a -> new String(a, StandardCharsets.ISO_8859_1)).toList()));
  }

  private String refused(String text) {
    return assertThrows(RespProtocolException.class, () -> feed(text)).getMessage();
  }

  /** The refusal of {@code text} by a new parser. */
  private static String fresh(String text) {
    byte[] b = text.getBytes(StandardCharsets.ISO_8859_1);
    return assertThrows(RespProtocolException.class, () -> new RespParser(8, 64, 100).feed(b, 0, b.length, c -> { }))
        .getMessage();
  }

  @Test
  void pipelinedCommandsInOneChunk() {
    feed("*1\r\n$4\r\nPING\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n");
    assertEquals(List.of(List.of("PING"), List.of("SET", "k", "")), commands);
    assertFalse(parser.partial());
  }

  @Test
  void everySplitOfAFrameParsesTheSame() {
    String frame = "*2\r\n$7\r\nEVALSHA\r\n$10\r\n0123\r\n6789\r\n";
    byte[] b = frame.getBytes(StandardCharsets.ISO_8859_1);
    for (int cut1 = 0; cut1 <= b.length; cut1++) {
      for (int cut2 = cut1; cut2 <= b.length; cut2++) {
        List<List<byte[]>> got = new ArrayList<>();
        RespParser p = new RespParser(8, 64, 100);
        p.feed(b, 0, cut1, got::add);
        p.feed(b, cut1, cut2 - cut1, got::add);
        assertEquals(cut2 == b.length ? 1 : 0, got.size(), "a command only with its last byte");
        p.feed(b, cut2, b.length - cut2, got::add);
        assertEquals(1, got.size(), "cuts " + cut1 + "/" + cut2);
        assertArrayEquals("EVALSHA".getBytes(StandardCharsets.ISO_8859_1), got.get(0).get(0));
        assertArrayEquals("0123\r\n6789".getBytes(StandardCharsets.ISO_8859_1), got.get(0).get(1), "CRLF inside a bulk is data");
      }
    }
  }

  @Test
  void byteByByteKeepsOnlyThePartialCommand() {
    for (byte b : "*2\r\n$4\r\nECHO\r\n$3\r\nhi!\r\n".getBytes(StandardCharsets.ISO_8859_1)) {
      assertTrue(commands.isEmpty());
      parser.feed(new byte[] {b}, 0, 1, c -> commands.add(List.of(new String(c.get(1), StandardCharsets.ISO_8859_1))));
    }
    assertEquals(List.of(List.of("hi!")), commands);
  }

  @Test
  void inlineCommandsAreRefused() {
    assertEquals("Protocol error: expected '*', got 'P'", refused("PING\r\n"));
  }

  @Test
  void nestedArraysAreRefused() {
    assertEquals("Protocol error: expected '$', got '*'", refused("*2\r\n*1\r\n$1\r\na\r\n"));
  }

  @Test
  void otherTypesInsideACommandAreRefused() {
    assertEquals("Protocol error: expected '$', got ':'", refused("*1\r\n:5\r\n"));
    assertEquals("Protocol error: expected '$', got '%'", fresh("*1\r\n%1\r\n"));
  }

  @Test
  void hugeArrayLengthsAreRefusedBeforeAnyAllocation() {
    assertEquals("Protocol error: invalid multibulk length 9 (1 to 8)", refused("*9\r\n"));
    assertEquals("Protocol error: invalid multibulk length 999999999999999999 (1 to 8)",
        fresh("*999999999999999999\r\n"));
    assertEquals("Protocol error: invalid length: 19 digits", fresh("*9999999999999999999\r\n"));
  }

  @Test
  void negativeAndEmptyLengthsAreRefused() {
    assertEquals("Protocol error: invalid multibulk length -1 (1 to 8)", refused("*-1\r\n"));
    assertEquals("Protocol error: invalid multibulk length 0 (1 to 8)", fresh("*0\r\n"));
    assertEquals("Protocol error: invalid bulk length -1 (0 to 64)", fresh("*1\r\n$-1\r\n"));
    assertEquals("Protocol error: invalid length: 0 digits", fresh("*\r\n"));
    assertEquals("Protocol error: invalid length: 0 digits", fresh("*-\r\n"));
    assertEquals("Protocol error: invalid length: '+' is not a digit", fresh("*+1\r\n"));
    assertEquals("Protocol error: invalid length: byte 0x20 is not a digit", fresh("*1 \r\n"));
  }

  @Test
  void hugeBulkLengthsAreRefused() {
    assertEquals("Protocol error: invalid bulk length 65 (0 to 64)", refused("*1\r\n$65\r\n"));
  }

  @Test
  void aCommandIsBoundedAsAWhole() {
    String sixty = "x".repeat(60);
    assertEquals("Protocol error: command longer than 100 bytes",
        refused("*2\r\n$60\r\n" + sixty + "\r\n$41\r\n"));
  }

  @Test
  void aDeclaredLengthCostsNothingUntilItsBytesArrive() {
    RespParser p = new RespParser(8, 1 << 20, 1 << 20);
    byte[] head = "*1\r\n$1000000\r\n".getBytes(StandardCharsets.ISO_8859_1);
    p.feed(head, 0, head.length, c -> { });
    assertEquals(1024, p.heldBytes(), "a million declared, nothing sent: the first buffer only");
    byte[] some = new byte[5_000];
    p.feed(some, 0, some.length, c -> { });
    assertEquals(5000, p.heldBytes(), "grown to hold what arrived");
    byte[] rest = new byte[1_000_000 - 5_000];
    List<List<byte[]>> got = new ArrayList<>();
    p.feed(rest, 0, rest.length, c -> { });
    p.feed("\r\n".getBytes(StandardCharsets.ISO_8859_1), 0, 2, got::add);
    assertEquals(1_000_000, got.get(0).get(0).length, "the argument is exactly its declared length");
    assertEquals(0, p.heldBytes());
  }

  @Test
  void longHeaderLinesAreRefused() {
    assertEquals("Protocol error: header line longer than 32 bytes", refused("*" + "0".repeat(40)));
  }

  @Test
  void lineEndsMustBeCrLf() {
    assertEquals("Protocol error: LF without CR", refused("*1\n"));
    assertEquals("Protocol error: CR not followed by LF", fresh("*1\rx"));
    assertEquals("Protocol error: bulk string not followed by CRLF", fresh("*1\r\n$2\r\nabc\r\n"));
    assertEquals("Protocol error: bulk string not followed by CRLF", fresh("*1\r\n$2\r\nab\rx"));
  }

  @Test
  void aFailedParserRefusesEverythingAfter() {
    refused("GET\r\n");
    assertEquals("Protocol error: connection already failed", refused("*1\r\n$4\r\nPING\r\n"));
    assertTrue(commands.isEmpty());
  }

  @Test
  void truncatedFrameIsHeldNotDelivered() {
    feed("*2\r\n$4\r\nECHO\r\n$5\r\nhel");
    assertTrue(commands.isEmpty());
    assertTrue(parser.partial());
    feed("lo\r\n");
    assertEquals(List.of(List.of("ECHO", "hello")), commands);
  }

  @Test
  void randomGarbageNeverEscapesAsAnythingButAProtocolError() {
    SplittableRandom random = new SplittableRandom(27);
    for (int run = 0; run < 2_000; run++) {
      byte[] junk = new byte[1 + random.nextInt(200)];
      for (int i = 0; i < junk.length; i++) {
        // mostly the bytes RESP is made of, so the parser gets deep into frames
        junk[i] = (byte) (random.nextInt(4) == 0 ? random.nextInt(256) : "*$\r\n0123456789-:%"
            .charAt(random.nextInt(17)));
      }
      RespParser p = new RespParser(8, 64, 100);
      try {
        p.feed(junk, 0, junk.length, c -> assertTrue(c.size() <= 8 && c.stream().allMatch(a -> a.length <= 64)));
      } catch (RespProtocolException expected) {
        assertTrue(expected.getMessage().startsWith("Protocol error: "));
      }
    }
  }

  @Test
  void limitsAreValidated() {
    assertEquals("maxArgs must be at least 1, was 0",
        assertThrows(IllegalArgumentException.class, () -> new RespParser(0, 1, 1)).getMessage());
    assertEquals("maxCommandBytes must be at least maxBulkBytes (10), was 9",
        assertThrows(IllegalArgumentException.class, () -> new RespParser(1, 10, 9)).getMessage());
  }
}
