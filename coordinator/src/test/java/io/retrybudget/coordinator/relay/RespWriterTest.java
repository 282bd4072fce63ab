package io.retrybudget.coordinator.relay;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class RespWriterTest {
  private static String text(RespWriter w) {
    return new String(w.take(), StandardCharsets.UTF_8);
  }

  @Test
  void scalars() {
    RespWriter w = new RespWriter();
    w.simple("OK").error("ERR no").integer(-42).bulk("héllo").bulk(new byte[0]);
    assertEquals("+OK\r\n-ERR no\r\n:-42\r\n$6\r\nhéllo\r\n$0\r\n\r\n", text(w));
    assertEquals(0, w.size(), "take starts again empty");
  }

  @Test
  void mapsAndNullsFollowTheProtocol() {
    RespWriter w = new RespWriter();
    w.map(1).bulk("proto").integer(2).nil();
    assertEquals("*2\r\n$5\r\nproto\r\n:2\r\n$-1\r\n", text(w));
    w.protocol(3);
    w.map(1).bulk("proto").integer(3).nil();
    assertEquals("%1\r\n$5\r\nproto\r\n:3\r\n_\r\n", text(w));
  }

  @Test
  void linesCannotBeForgedThroughErrorsOrSimpleStrings() {
    RespWriter w = new RespWriter();
    w.error("ERR unknown command 'X\r\n+OK'").simple("a\nb\u0000c");
    assertEquals("-ERR unknown command 'X  +OK'\r\n+a b c\r\n", text(w));
  }

  @Test
  void growsPastItsFirstBuffer() {
    RespWriter w = new RespWriter();
    String big = "x".repeat(10_000);
    w.array(2).bulk(big).integer(1);
    assertEquals("*2\r\n$10000\r\n" + big + "\r\n:1\r\n", text(w));
  }

  @Test
  void protocolIsTwoOrThree() {
    assertEquals("protocol must be 2 or 3, was 4",
        assertThrows(IllegalArgumentException.class, () -> new RespWriter().protocol(4)).getMessage());
  }
}
