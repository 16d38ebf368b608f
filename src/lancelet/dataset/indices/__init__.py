"""indices"""
