"""The parts of tool-call argument validation that ``errord.decide.arguments.validators``
puts together."""
