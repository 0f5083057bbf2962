"""The parts of tool-call argument validation that ``errord.decide.validate`` puts together."""
