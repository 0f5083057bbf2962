"""Benchmark: does errord make agents recover better than the retry stacks they use today?"""
