package dev.phrony.worker.agent;

import dev.phrony.worker.UserErrorException;

/**
 * An agent {@code dev --agent} cannot run: the message names the file, the field and what to do, as
 * one line per problem.
 */
public final class AgentLoadException extends UserErrorException {
  private static final long serialVersionUID = 1L;

  public AgentLoadException(String message) {
    super(message);
  }
}
